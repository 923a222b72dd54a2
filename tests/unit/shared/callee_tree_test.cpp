#include "callee_tree.h"

#include <gtest/gtest.h>

#include <set>

#include "hex.h"
#include "objdump_listing.h"

namespace xref {
namespace {

using test::fixture_path;
using test::ObjdumpListing;

// The tree as indented text: one line per node ("<edge kind> <name> <state>")
// and per indirect edge ("<edge kind> <operand>"). A child shared by several
// edges is written once, under its first edge.
std::string node_name(const CalleeNode& node) { return node.function ? node.function->name : to_hex(node.va); }

void render(const CalleeTree& tree, int index, int indent, std::set<int>& written, std::string& out) {
  const CalleeNode& node = tree.nodes[static_cast<size_t>(index)];
  for (const auto& edge : node.edges) {
    out += std::string(static_cast<size_t>(indent), ' ') + edge_kind_name(edge.kind) + " ";
    if (edge.child < 0) {
      out += edge.target.operand + "\n";
      continue;
    }
    const CalleeNode& child = tree.nodes[static_cast<size_t>(edge.child)];
    out += node_name(child) + " " + node_state_name(child.state) + "\n";
    if (written.insert(edge.child).second) render(tree, edge.child, indent + 2, written, out);
  }
}

std::string render(const CalleeTree& tree) {
  std::string out = node_name(tree.nodes[0]) + " " + node_state_name(tree.nodes[0].state) + "\n";
  std::set<int> written{0};
  render(tree, 0, 2, written, out);
  return out;
}

class CalleeTreeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = fixture_path(GetParam());
    auto image = ElfImage::open(path_);
    ASSERT_TRUE(image) << image.error().message;
    image_.emplace(std::move(image).value());
    symbols_ = test::nm_symbols(path_);
  }

  uint64_t nm(const std::string& name) const { return test::nm_symbol(symbols_, name).start; }

  CalleeTree tree(const std::string& root, int depth) const {
    auto built = callee_tree(*image_, nm(root), depth);
    if (!built) throw std::runtime_error(built.error().message);
    return std::move(built).value();
  }

  std::string path_;
  std::optional<ElfImage> image_;
  std::vector<test::NmSymbol> symbols_;
};

TEST_P(CalleeTreeTest, DepthZeroIsTheRootAlone) {
  const auto root = tree("tree_root", 0);
  ASSERT_EQ(root.nodes.size(), 1u);
  EXPECT_EQ(root.nodes[0].state, NodeState::depth_limit);
  EXPECT_TRUE(root.nodes[0].edges.empty());
  EXPECT_EQ(root.nodes[0].va, nm("tree_root"));
}

TEST_P(CalleeTreeTest, DepthOne) {
  EXPECT_EQ(render(tree("tree_root", 1)),
            "tree_root expanded\n"
            "  call chain_a depth_limit\n"
            "  call indirect_caller depth_limit\n"
            "  call recurse depth_limit\n"
            "  call ping depth_limit\n"
            "  call say depth_limit\n"
            "  tail_jump tail_caller depth_limit\n");
}

TEST_P(CalleeTreeTest, DepthTwoMarksRecursionPltAndTailJumps) {
  EXPECT_EQ(render(tree("tree_root", 2)),
            "tree_root expanded\n"
            "  call chain_a expanded\n"
            "    call chain_b depth_limit\n"
            "  call indirect_caller expanded\n"
            "    indirect_call rax\n"
            "  call recurse expanded\n"
            "    call recurse recursive\n"
            "  call ping expanded\n"
            "    call pong depth_limit\n"
            "  call say expanded\n"
            "    call puts@plt external\n"
            "  tail_jump tail_caller expanded\n"
            "    tail_jump tail_target depth_limit\n");
}

TEST_P(CalleeTreeTest, MutualRecursionIsCutWhereTheCalleeIsOnThePath) {
  EXPECT_EQ(render(tree("ping", 5)),
            "ping expanded\n"
            "  call pong expanded\n"
            "    call ping recursive\n");
  // Reached from elsewhere, the same function is expanded again: recursion
  // is about the path, not about having been seen.
  const auto from_root = render(tree("tree_root", 3));
  EXPECT_NE(from_root.find("  call ping expanded\n    call pong expanded\n      call ping recursive\n"),
            std::string::npos)
      << from_root;
  EXPECT_NE(from_root.find("  call chain_a expanded\n    call chain_b expanded\n      call chain_c depth_limit\n"),
            std::string::npos)
      << from_root;
}

// Sites and return sites are objdump's call and jmp lines of each expanded function.
TEST_P(CalleeTreeTest, EdgeSitesMatchObjdump) {
  const ObjdumpListing listing(path_);
  const auto built = tree("tree_root", 2);
  size_t expanded = 0;
  for (const auto& node : built.nodes) {
    if (node.state != NodeState::expanded) continue;
    ++expanded;
    SCOPED_TRACE(node.function->name);
    std::vector<std::pair<uint64_t, uint64_t>> expected;  // site, return site (0 for jumps)
    for (const auto& line : listing.in_range(node.function->start, node.function->end())) {
      if (line.is_call()) expected.emplace_back(line.address, line.next);
      if (!line.is_jump() && !line.is_conditional_jump()) continue;
      if (line.indirect() || line.direct_target() < node.function->start ||
          line.direct_target() >= node.function->end()) {
        expected.emplace_back(line.address, 0);
      }
    }
    std::vector<std::pair<uint64_t, uint64_t>> actual;
    for (const auto& edge : node.edges) actual.emplace_back(edge.site_va, edge.return_va);
    EXPECT_EQ(actual, expected);
    for (const auto& edge : node.edges) {
      if (edge.child < 0) continue;
      EXPECT_EQ(built.nodes[static_cast<size_t>(edge.child)].va, edge.target.va);
      EXPECT_EQ(built.nodes[static_cast<size_t>(edge.child)].parent, &node - built.nodes.data());
      EXPECT_EQ(built.nodes[static_cast<size_t>(edge.child)].depth, node.depth + 1);
    }
  }
  EXPECT_EQ(expanded, 7u);
}

TEST_P(CalleeTreeTest, TreeFunctionsAreTheUniqueKnownFunctions) {
  const auto functions = tree_functions(tree("tree_root", 2));
  std::set<std::string> names;
  for (size_t i = 0; i < functions.size(); ++i) {
    names.insert(functions[i].name);
    if (i > 0) {
      EXPECT_LT(functions[i - 1].start, functions[i].start);
    }
    if (functions[i].source != SymbolSource::plt) {
      EXPECT_EQ(functions[i].start, nm(functions[i].name));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"tree_root", "chain_a", "chain_b", "indirect_caller", "recurse", "ping",
                                          "pong", "say", "puts@plt", "tail_caller", "tail_target"}));
  EXPECT_EQ(functions.size(), names.size());
}

TEST_P(CalleeTreeTest, UnknownTargetsKeepTheirRawVa) {
  const auto built = tree("asm_unnamed_calls", 1);
  ASSERT_EQ(built.nodes[0].edges.size(), 2u);
  const CalleeEdge& call = built.nodes[0].edges[0];
  const CalleeEdge& jump = built.nodes[0].edges[1];
  EXPECT_EQ(call.kind, EdgeKind::call);
  EXPECT_EQ(jump.kind, EdgeKind::jump);
  // Both go to the unnamed code right after the function, one shared node.
  ASSERT_GE(call.child, 0);
  EXPECT_EQ(call.child, jump.child);
  const CalleeNode& unknown = built.nodes[static_cast<size_t>(call.child)];
  EXPECT_EQ(unknown.state, NodeState::not_a_function);
  EXPECT_FALSE(unknown.function.has_value());
  const ObjdumpListing listing(path_);
  const auto lines = listing.in_range(nm("asm_unnamed_calls"), nm("asm_unnamed_calls") + test::nm_symbol(symbols_, "asm_unnamed_calls").size);
  uint64_t objdump_target = 0;
  for (const auto& line : lines) {
    if (line.is_call()) objdump_target = line.direct_target();
  }
  EXPECT_EQ(unknown.va, objdump_target);
  EXPECT_EQ(image_->function_at(unknown.va), nullptr);
  EXPECT_EQ(tree_functions(built).size(), 1u);
}

TEST_P(CalleeTreeTest, ColdPartsAndJumpTables) {
  EXPECT_EQ(render(tree("cold_split", 2)),
            "cold_split expanded\n"
            "  jump cold_split.cold expanded\n"
            "    call abort@plt external\n");
  const auto cold = tree("cold_split", 2);
  ASSERT_EQ(cold.nodes[1].edges.size(), 1u);
  EXPECT_FALSE(cold.nodes[1].edges[0].return_in_function);  // abort does not return

  // The jump table's indirect jmp goes through a register (PIE) or an
  // absolute table in memory (non-PIE); objdump says which.
  const ObjdumpListing listing(path_);
  std::string table_jump;
  for (const auto& line : listing.in_range(nm("dispatch"), nm("dispatch") + test::nm_symbol(symbols_, "dispatch").size)) {
    if (line.is_jump() && line.indirect()) table_jump = line.operands.rfind("*%", 0) == 0 ? "register" : "memory";
  }
  ASSERT_FALSE(table_jump.empty());
  const auto table = tree("dispatch", 1);
  std::multiset<std::string> edges;
  for (const auto& edge : table.nodes[0].edges) {
    edges.insert(std::string(edge_kind_name(edge.kind)) + " " +
                 (edge.child < 0 ? operand_kind_name(edge.target.kind)
                                 : node_name(table.nodes[static_cast<size_t>(edge.child)])));
  }
  EXPECT_EQ(edges, (std::multiset<std::string>{"indirect_jump " + table_jump, "tail_jump chain_c", "tail_jump tail_target",
                                               "tail_jump leaf_add", "tail_jump recurse", "tail_jump ping",
                                               "tail_jump pong", "tail_jump classify", "tail_jump chain_a"}));
}

TEST_P(CalleeTreeTest, BadRequestsAreErrors) {
  auto inside = callee_tree(*image_, nm("tree_root") + 1, 1);
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(inside.error().message.find("inside tree_root"), std::string::npos) << inside.error().message;
  auto negative = callee_tree(*image_, nm("tree_root"), -1);
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code, ErrorCode::invalid_argument);
  auto too_big = callee_tree(*image_, nm("tree_root"), 2, 5);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, ErrorCode::invalid_argument);
}

// Stripped images: the same tree by address, found through FDE ranges.
TEST_P(CalleeTreeTest, StrippedImageGivesTheSameTreeByAddress) {
  auto stripped = ElfImage::open(path_ + "_stripped");
  ASSERT_TRUE(stripped) << stripped.error().message;
  size_t fde_ranges = 0;
  for (const FunctionSymbol* function : stripped->all_functions()) fde_ranges += function->is_fde_range() ? 1 : 0;
  if (fde_ranges == 0) GTEST_SKIP() << "ElfImage lists no .eh_frame FDE ranges for stripped images yet";

  const auto named = tree("tree_root", 3);
  auto built = callee_tree(*stripped, nm("tree_root"), 3);
  ASSERT_TRUE(built) << built.error().message;
  ASSERT_EQ(built->nodes.size(), named.nodes.size());
  for (size_t i = 0; i < named.nodes.size(); ++i) {
    const CalleeNode& expected = named.nodes[i];
    const CalleeNode& actual = built->nodes[i];
    SCOPED_TRACE(node_name(expected));
    EXPECT_EQ(actual.va, expected.va);
    EXPECT_EQ(actual.state, expected.state);
    EXPECT_EQ(actual.parent, expected.parent);
    ASSERT_EQ(actual.edges.size(), expected.edges.size());
    for (size_t e = 0; e < expected.edges.size(); ++e) {
      EXPECT_EQ(actual.edges[e].kind, expected.edges[e].kind);
      EXPECT_EQ(actual.edges[e].site_va, expected.edges[e].site_va);
      EXPECT_EQ(actual.edges[e].return_va, expected.edges[e].return_va);
      EXPECT_EQ(actual.edges[e].child, expected.edges[e].child);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, CalleeTreeTest, ::testing::Values("calls_pie", "calls_nopie"));

}  // namespace
}  // namespace xref
