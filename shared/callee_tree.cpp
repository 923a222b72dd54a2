#include "callee_tree.h"

#include <algorithm>
#include <deque>
#include <map>

#include "cfa_rule.h"
#include "hex.h"

namespace xref {

const char* edge_kind_name(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::call: return "call";
    case EdgeKind::tail_jump: return "tail_jump";
    case EdgeKind::jump: return "jump";
    case EdgeKind::indirect_call: return "indirect_call";
    case EdgeKind::indirect_jump: return "indirect_jump";
  }
  return "unknown";
}

const char* node_state_name(NodeState state) {
  switch (state) {
    case NodeState::expanded: return "expanded";
    case NodeState::depth_limit: return "depth_limit";
    case NodeState::recursive: return "recursive";
    case NodeState::external: return "external";
    case NodeState::not_a_function: return "not_a_function";
    case NodeState::failed: return "failed";
  }
  return "unknown";
}

namespace {

std::vector<CalleeEdge> edges_of(const FunctionCode& code) {
  std::vector<CalleeEdge> edges;
  for (const auto& call : code.calls) {
    CalleeEdge edge;
    edge.kind = call.target.indirect() ? EdgeKind::indirect_call : EdgeKind::call;
    edge.site_va = call.va;
    edge.return_va = call.return_va;
    edge.return_in_function = call.return_in_function;
    edge.target = call.target;
    edges.push_back(std::move(edge));
  }
  for (const auto& exit : code.exits) {
    CalleeEdge edge;
    switch (exit.kind) {
      case ExitKind::indirect: edge.kind = EdgeKind::indirect_jump; break;
      case ExitKind::tail_call: edge.kind = EdgeKind::tail_jump; break;
      // disassemble() with an image classifies every direct exit, so
      // candidate_tail does not reach here; were it to, claiming a tail call
      // unchecked would be wrong, so it is a plain jump.
      case ExitKind::candidate_tail:
      case ExitKind::cold_part:
      case ExitKind::outside_jump: edge.kind = EdgeKind::jump; break;
    }
    edge.site_va = exit.va;
    edge.target = exit.target;
    edges.push_back(std::move(edge));
  }
  std::sort(edges.begin(), edges.end(),
            [](const CalleeEdge& a, const CalleeEdge& b) { return a.site_va < b.site_va; });
  return edges;
}

bool on_path(const std::vector<CalleeNode>& nodes, int from, uint64_t va) {
  for (int index = from; index >= 0; index = nodes[static_cast<size_t>(index)].parent) {
    if (nodes[static_cast<size_t>(index)].va == va) return true;
  }
  return false;
}

class TreeBuilder {
 public:
  TreeBuilder(const ElfImage& image, int depth, size_t max_nodes)
      : image_(image), depth_(depth), max_nodes_(max_nodes) {}

  Result<CalleeTree> build(const FunctionSymbol& root) {
    CalleeNode node;
    node.va = root.start;
    node.function = root;
    node.state = initial_state(root, 0, -1);
    tree_.nodes.push_back(std::move(node));
    if (tree_.nodes[0].state == NodeState::expanded) pending_.push_back(0);
    // Breadth-first, so node indices grow with depth.
    while (!pending_.empty()) {
      const size_t index = pending_.front();
      pending_.pop_front();
      if (auto expanded = expand(index); !expanded) return expanded.error();
    }
    return std::move(tree_);
  }

 private:
  NodeState initial_state(const FunctionSymbol& function, int depth, int parent) const {
    if (on_path(tree_.nodes, parent, function.start)) return NodeState::recursive;
    if (function.source == SymbolSource::plt) return NodeState::external;
    if (depth >= depth_) return NodeState::depth_limit;
    return NodeState::expanded;  // provisional: expand() may turn it into failed
  }

  const Result<FunctionCode>& code_of(const FunctionSymbol& function) {
    auto found = cache_.find(function.start);
    if (found == cache_.end()) found = cache_.emplace(function.start, disassemble(image_, function)).first;
    return found->second;
  }

  Result<void> expand(size_t index) {
    const FunctionSymbol function = *tree_.nodes[index].function;
    const auto& code = code_of(function);
    if (!code) {
      tree_.nodes[index].state = NodeState::failed;
      tree_.nodes[index].error = code.error().message;
      return {};
    }
    tree_.nodes[index].complete = code->complete();
    std::vector<CalleeEdge> edges = edges_of(*code);
    std::map<uint64_t, int> children;  // one child per distinct direct target
    for (auto& edge : edges) {
      if (edge.kind == EdgeKind::indirect_call || edge.kind == EdgeKind::indirect_jump) continue;
      auto [slot, inserted] = children.emplace(edge.target.va, -1);
      if (inserted) {
        if (tree_.nodes.size() >= max_nodes_) {
          return make_error(ErrorCode::invalid_argument,
                            "the callee tree exceeds " + std::to_string(max_nodes_) + " nodes",
                            "ask for a smaller depth");
        }
        // A split-off part (.cold) is the function itself, at its depth:
        // what it calls is as deep as what the function calls.
        const bool part = (edge.kind == EdgeKind::jump || edge.kind == EdgeKind::tail_jump) &&
                          is_split_part(image_, *code, edge.target.va);
        slot->second = add_child(index, edge.target.va, part);
      }
      edge.child = slot->second;
    }
    tree_.nodes[index].edges = std::move(edges);
    return {};
  }

  int add_child(size_t parent, uint64_t va, bool split_part) {
    CalleeNode node;
    node.va = va;
    node.depth = tree_.nodes[parent].depth + (split_part ? 0 : 1);
    node.parent = static_cast<int>(parent);
    if (const FunctionSymbol* function = image_.function_at(va)) {
      node.function = *function;
      node.state = initial_state(*function, node.depth, node.parent);
    } else {
      node.state = NodeState::not_a_function;
    }
    const int child = static_cast<int>(tree_.nodes.size());
    if (node.state == NodeState::expanded) pending_.push_back(tree_.nodes.size());
    tree_.nodes.push_back(std::move(node));
    return child;
  }

  const ElfImage& image_;
  const int depth_;
  const size_t max_nodes_;
  CalleeTree tree_;
  std::deque<size_t> pending_;
  std::map<uint64_t, Result<FunctionCode>> cache_;
};

}  // namespace

Result<CalleeTree> callee_tree(const ElfImage& image, uint64_t root_va, int depth, size_t max_nodes) {
  if (depth < 0) {
    return make_error(ErrorCode::invalid_argument, "callee tree depth " + std::to_string(depth) + " is negative");
  }
  const FunctionSymbol* root = image.function_at(root_va);
  if (root == nullptr) {
    std::string message = to_hex(root_va) + " is not the start of a known function";
    if (const FunctionSymbol* owner = image.function_containing(root_va)) {
      message += "; it is inside " + owner->name + " at " + to_hex(owner->start);
    }
    return make_error(ErrorCode::invalid_argument, message, "give a function's start address or name");
  }
  return TreeBuilder(image, depth, max_nodes).build(*root);
}

bool is_split_part(const ElfImage& image, const FunctionCode& caller, uint64_t target_va) {
  if (target_va == 0) return false;
  const FunctionSymbol* part = image.function_at(target_va);
  if (part == nullptr) return false;
  if (part->name.find(".cold") != std::string::npos) return true;
  // In a stripped image the part is an FDE range of its own. A function's
  // first instruction always runs with CFA = rsp+8 (the return address was
  // just pushed); a split-off part starts inside its parent's frame, whose
  // pushes and stack adjustments its unwind row carries. That tells a cold
  // part that never comes back (it ends in a noreturn call) from a tail call.
  if (part->source == SymbolSource::eh_frame_fde) {
    auto rule = cfa_rule_at(image, target_va);
    if (rule && !(rule->reg == CfaRule::Register::rsp && rule->offset == 8)) return true;
  }
  auto code = disassemble(image, *part);
  if (!code) return false;
  // A jump to the caller's first instruction is a (mutually recursive) tail
  // call, not a way back into its body.
  return std::any_of(code->exits.begin(), code->exits.end(), [&](const ExitJump& exit) {
    return exit.target.va > caller.start && exit.target.va < caller.end;
  });
}

std::vector<FunctionSymbol> tree_functions(const CalleeTree& tree) {
  std::map<uint64_t, const FunctionSymbol*> unique;
  for (const auto& node : tree.nodes) {
    if (node.function) unique.emplace(node.function->start, &*node.function);
  }
  std::vector<FunctionSymbol> functions;
  functions.reserve(unique.size());
  for (const auto& [start, function] : unique) functions.push_back(*function);
  return functions;
}

}  // namespace xref
