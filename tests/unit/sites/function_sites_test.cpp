// Where a function's own probes go (sites/function_sites.h), on the calls
// fixture, against objdump: its rets and the jumps that leave it, in its own
// code and in its split-off ".cold" part; jumps into that part stay inside.
#include "sites/function_sites.h"

#include <gtest/gtest.h>

#include <tuple>

#include "hex.h"
#include "fixture_code.h"

namespace xref {
namespace {

using test::NmSymbol;

class FunctionSites : public ::testing::TestWithParam<std::string> {
 protected:
  bool starts_a_function(uint64_t va) const {
    for (const NmSymbol& symbol : fixture_.symbols()) {
      if (symbol.is_text() && symbol.start == va) return true;
    }
    return false;
  }

  const test::FixtureCode fixture_{GetParam()};
};

using Exit = std::tuple<FunctionExitKind, uint64_t, size_t, uint64_t>;  // kind, va, part, target

// objdump's view: per range (the function, then its .cold part), the rets,
// then the direct jumps whose target lies outside every range.
TEST_P(FunctionSites, ExitsAreTheRetsAndTheJumpsOutObjdumpShows) {
  for (const std::string name :
       {"leaf_add", "chain_b", "classify", "tail_caller", "dispatch", "tree_root", "cold_split", "asm_unnamed_calls"}) {
    SCOPED_TRACE(name);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    const NmSymbol function = fixture_.symbol(name);
    ranges.emplace_back(function.start, function.start + function.size);
    for (const NmSymbol& symbol : fixture_.symbols()) {
      if (symbol.name == name + ".cold") ranges.emplace_back(symbol.start, symbol.start + symbol.size);
    }
    auto inside = [&](uint64_t va) {
      for (const auto& [start, end] : ranges) {
        if (va >= start && va < end) return true;
      }
      return false;
    };
    std::vector<Exit> expected;
    for (size_t part = 0; part < ranges.size(); ++part) {
      const auto lines = fixture_.listing().in_range(ranges[part].first, ranges[part].second);
      for (const auto& line : lines) {
        if (line.is_ret()) expected.emplace_back(FunctionExitKind::ret, line.address, part, 0);
      }
      for (const auto& line : lines) {
        if (!(line.is_jump() || line.is_conditional_jump()) || line.indirect() || inside(line.direct_target())) continue;
        const FunctionExitKind kind = line.is_conditional_jump()             ? FunctionExitKind::conditional_tail_jump
                                      : starts_a_function(line.direct_target()) ? FunctionExitKind::tail_jump
                                                                                : FunctionExitKind::outside_jump;
        expected.emplace_back(kind, line.address, part, line.direct_target());
      }
    }

    const FunctionCode code = fixture_.code_of(name);
    SplitParts split;
    const std::vector<FunctionCode> parts = split.code_parts(0, fixture_.image(), code);
    ASSERT_EQ(parts.size(), ranges.size());
    for (size_t part = 0; part < parts.size(); ++part) EXPECT_EQ(parts[part].start, ranges[part].first);
    std::vector<Exit> listed;
    for (const FunctionExit& exit : function_exits(split, 0, fixture_.image(), parts)) {
      listed.emplace_back(exit.kind, exit.va, exit.part, exit.target_va);
    }
    // dispatch's one indirect jump reads its switch table: it stays inside.
    EXPECT_EQ(listed, expected);
  }
}

TEST_P(FunctionSites, TheEntryProbeGoesOnTheNopAfterEndbr64) {
  const NmSymbol nop_entry = fixture_.symbol("entry_nop_func");
  const auto lines = fixture_.listing().in_range(nop_entry.start, nop_entry.start + nop_entry.size);
  ASSERT_GE(lines.size(), 2u);
  ASSERT_EQ(lines[0].mnemonic, "endbr64");
  ASSERT_EQ(lines[1].mnemonic, "nopl");
  ASSERT_EQ(lines[1].next - lines[1].address, 5u);
  EXPECT_EQ(entry_probe_va(fixture_.code_of("entry_nop_func")), lines[1].address);
  for (const char* name : {"leaf_add", "tree_root", "cold_split"}) {
    EXPECT_EQ(entry_probe_va(fixture_.code_of(name)), fixture_.symbol(name).start) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, FunctionSites, ::testing::Values("calls_pie", "calls_nopie"));

}  // namespace
}  // namespace xref
