// The call sites of a callee-tree node (sites/call_sites.h) and what to
// fetch at an indirect call (sites/call_target_fetch.h), on the calls
// fixture against objdump, and on operands as Capstone prints them.
#include "sites/call_sites.h"

#include <gtest/gtest.h>

#include "sites/call_target_fetch.h"
#include "hex.h"
#include "fixture_code.h"

namespace xref {
namespace {

using test::NmSymbol;

class CallSites : public ::testing::TestWithParam<std::string> {
 protected:
  // The sites of `name` as the root of its depth-1 callee tree.
  NodeCallSites sites_of(const std::string& name, std::set<uint64_t>& listed) const {
    auto tree = callee_tree(fixture_.image(), fixture_.symbol(name).start, 1);
    if (!tree) throw std::runtime_error(tree.error().message);
    SplitParts split;
    listed.insert(tree->nodes[0].va);
    auto sites = node_call_sites(split, 0, fixture_.image(), *tree, tree->nodes[0], listed);
    if (!sites) throw std::runtime_error(sites.error().message);
    return std::move(sites).value();
  }

  const test::FixtureCode fixture_{GetParam()};
};

// tree_root's calls and its closing tail jump, as objdump lists them.
TEST_P(CallSites, ANodesSitesAreItsCallsAndJumpsOutInAddressOrder) {
  std::set<uint64_t> listed;
  const NodeCallSites sites = sites_of("tree_root", listed);
  std::vector<std::pair<uint64_t, uint64_t>> expected, found;
  for (const auto& line : fixture_.lines_of("tree_root")) {
    if (line.is_call() || line.is_jump()) expected.emplace_back(line.address, line.direct_target());
  }
  ASSERT_FALSE(expected.empty());
  for (const NodeCallSite& site : sites.sites) {
    found.emplace_back(site.edge.site_va, site.edge.target.va);
    EXPECT_EQ(site.code, 0u);
    EXPECT_EQ(site.caller, "tree_root");
    EXPECT_FALSE(site.in_split_part || site.into_split_part || site.conditional);
  }
  EXPECT_EQ(found, expected);
  EXPECT_EQ(sites.sites.back().edge.kind, EdgeKind::tail_jump);
  EXPECT_EQ(sites.sites.back().edge.target.va, fixture_.symbol("tail_caller").start);
}

// cold_split jumps (jl) into cold_split.cold, whose call to abort is listed
// right after that jump, once.
TEST_P(CallSites, ASplitOffPartsSitesFollowTheJumpIntoIt) {
  std::set<uint64_t> listed;
  const NodeCallSites sites = sites_of("cold_split", listed);
  const NmSymbol cold = fixture_.symbol("cold_split.cold");
  uint64_t jump = 0, call = 0;
  for (const auto& line : fixture_.lines_of("cold_split")) {
    if (line.is_conditional_jump() && line.direct_target() == cold.start) jump = line.address;
  }
  for (const auto& line : fixture_.lines_of("cold_split.cold")) {
    if (line.is_call() && line.target_symbol() == "abort@plt") call = line.address;
  }
  ASSERT_NE(jump, 0u);
  ASSERT_NE(call, 0u);
  ASSERT_EQ(sites.sites.size(), 2u);
  EXPECT_EQ(sites.sites[0].edge.site_va, jump);
  EXPECT_FALSE(sites.sites[0].in_split_part);
  EXPECT_EQ(sites.sites[1].edge.site_va, call);
  EXPECT_EQ(sites.sites[1].edge.kind, EdgeKind::call);
  EXPECT_TRUE(sites.sites[1].in_split_part);
  EXPECT_EQ(sites.sites[1].caller, "cold_split.cold");
  EXPECT_EQ(sites.sites[1].caller_va, cold.start);
  ASSERT_EQ(sites.codes.size(), 2u);
  EXPECT_EQ(sites.codes[sites.sites[1].code].start, cold.start);
  EXPECT_TRUE(listed.count(cold.start));

  // Reached again (the part listed already): the jump alone.
  auto tree = callee_tree(fixture_.image(), fixture_.symbol("cold_split").start, 1);
  ASSERT_TRUE(tree);
  SplitParts split;
  auto again = node_call_sites(split, 0, fixture_.image(), *tree, tree->nodes[0], listed);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->sites.size(), 1u);
}

// indirect_caller calls through %rax; memory_indirect_caller through the
// pointer objdump names in its comment ("# 4028 <memory_fp>"): read at the
// call, ip-relative.
TEST_P(CallSites, AnIndirectCallsTargetIsReadWhereTheCallReadsIt) {
  std::set<uint64_t> listed;
  const NodeCallSites by_register = sites_of("indirect_caller", listed);
  ASSERT_EQ(by_register.sites.size(), 1u);
  ASSERT_EQ(by_register.sites[0].edge.kind, EdgeKind::indirect_call);
  const CallTargetFetch from_register =
      call_target_fetch(by_register.sites[0].edge.target, by_register.sites[0].edge.site_va);
  ASSERT_TRUE(from_register.item);
  EXPECT_EQ(from_register.item->name, "target");
  EXPECT_EQ(from_register.item->base, Register::ax);
  EXPECT_TRUE(from_register.item->deref_offsets.empty());

  const NodeCallSites by_memory = sites_of("memory_indirect_caller", listed);
  ASSERT_EQ(by_memory.sites.size(), 1u);
  uint64_t slot = 0;
  for (const auto& line : fixture_.lines_of("memory_indirect_caller")) {
    if (line.is_call()) slot = line.comment_address().value_or(0);
  }
  ASSERT_EQ(slot, fixture_.symbol("memory_fp").start);
  const uint64_t site = by_memory.sites[0].edge.site_va;
  const CallTargetFetch from_memory = call_target_fetch(by_memory.sites[0].edge.target, site);
  ASSERT_TRUE(from_memory.item);
  EXPECT_EQ(from_memory.item->base, Register::ip);
  EXPECT_EQ(from_memory.item->deref_offsets, (std::vector<int32_t>{static_cast<int32_t>(slot - site)}));
  EXPECT_FALSE(from_memory.indexed);
}

INSTANTIATE_TEST_SUITE_P(Variants, CallSites, ::testing::Values("calls_pie", "calls_nopie"));

BranchTarget through(const std::string& operand) {
  BranchTarget target;
  target.kind = OperandKind::memory;
  target.operand = operand;
  return target;
}

TEST(CallTargetFetch, MemoryOperandsAreReadThroughTheirRegisters) {
  struct Case {
    std::string operand;
    Register base;
    std::optional<Register> index;
    uint8_t scale;
    int32_t offset;
  };
  const Case cases[] = {
      {"qword ptr [rbx + 0x20]", Register::bx, std::nullopt, 1, 32},
      {"qword ptr [rdx + rax*8 + 0x10]", Register::dx, Register::ax, 8, 16},  // a table of pointers
      {"qword ptr [rax*8 - 8]", Register::ax, Register::ax, 7, -8},  // the index is the base too, scale - 1 more
  };
  for (const Case& each : cases) {
    SCOPED_TRACE(each.operand);
    const CallTargetFetch fetch = call_target_fetch(through(each.operand), 0x1000);
    ASSERT_TRUE(fetch.item);
    EXPECT_TRUE(fetch.understood);
    EXPECT_EQ(fetch.indexed, each.index.has_value());  // BPF only: no kernel fetch syntax for an index
    EXPECT_EQ(fetch.item->base, each.base);
    EXPECT_EQ(fetch.item->index, each.index);
    EXPECT_EQ(fetch.item->scale, each.scale);
    EXPECT_EQ(fetch.item->deref_offsets, std::vector<int32_t>{each.offset});
  }
}

TEST(CallTargetFetch, AnOperandOfAnotherFormIsNotUnderstood) {
  const CallTargetFetch segment = call_target_fetch(through("qword ptr fs:[0x28]"), 0x1000);
  EXPECT_FALSE(segment.item);
  EXPECT_FALSE(segment.understood);
  EXPECT_TRUE(call_target_fetch(through("qword ptr [rbx]"), 0x1000).understood);
}

}  // namespace
}  // namespace xref
