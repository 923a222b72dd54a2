// trace show --tree: the static callee tree of a window's start function,
// and the window's calls counted on it. A call is matched to its caller's
// node by target VA; calls at an indirect site go under that site; anything
// the static tree does not have becomes an `observed` node.
#include <algorithm>
#include <deque>
#include <set>

#include "hex.h"
#include "number_parse.h"
#include "trace/saved/file.h"
#include "trace/saved/show.h"

namespace xref {
namespace {

std::optional<uint64_t> va_of(const nlohmann::json& object, const char* key) {
  const std::string text = saved_text(object, key);
  if (text.empty()) return std::nullopt;
  auto va = parse_u64(text, key);
  return va ? std::optional<uint64_t>(*va) : std::nullopt;
}

std::string function_name(const CalleeNode& node) {
  return node.function ? node.function->demangled : to_hex(node.va);
}

// The static part, built level by level from one-level callee trees: one
// node per distinct direct callee (call or tail jump) and one per indirect
// call instruction, in address order of their first site. A function's
// split-off parts (".cold") count as the function itself: their calls are
// its calls, at its level.
class StaticPart {
 public:
  StaticPart(const ElfImage& image, int depth, const TracedProbes& traced, std::vector<ShowNode>& nodes)
      : image_(image), depth_(depth), traced_(traced), nodes_(nodes) {}

  Result<void> add_root(const FunctionSymbol& root) {
    ShowNode node;
    node.va = root.start;
    node.name = root.demangled;
    node.traced = true;
    nodes_.push_back(std::move(node));
    return expand(0);
  }

 private:
  static constexpr size_t kMaxNodes = 100000;

  struct Edge {
    const CalleeEdge* edge;
    const CalleeNode* callee;  // nullptr for an indirect call
  };

  const Result<CalleeTree>& level_of(uint64_t va) {
    auto found = levels_.find(va);
    if (found == levels_.end()) found = levels_.emplace(va, callee_tree(image_, va, 1)).first;
    return found->second;
  }

  bool split_part_of(uint64_t caller, const CalleeNode& target) {
    auto [cached, inserted] = split_parts_.emplace(std::make_pair(caller, target.va), false);
    if (!inserted) return cached->second;
    const FunctionSymbol* function = image_.function_at(caller);
    if (!target.function || function == nullptr) return false;
    auto code = disassemble(image_, *function);
    cached->second = code && is_split_part(image_, *code, target.va);
    return cached->second;
  }

  // The call edges of the function at `va` and of its split-off parts, in
  // address order; nullopt when the function did not disassemble.
  std::optional<std::vector<Edge>> edges_of(uint64_t va) {
    std::vector<Edge> edges;
    std::deque<uint64_t> parts = {va};
    std::set<uint64_t> seen = {va};
    while (!parts.empty()) {
      const uint64_t part = parts.front();
      parts.pop_front();
      const auto& level = level_of(part);
      if (!level || level->nodes[0].state != NodeState::expanded) {
        if (part == va) return std::nullopt;
        continue;
      }
      for (const CalleeEdge& edge : level->nodes[0].edges) {
        const CalleeNode* callee = edge.child >= 0 ? &level->nodes[static_cast<size_t>(edge.child)] : nullptr;
        if (edge.kind == EdgeKind::indirect_jump) continue;
        const bool into_part = callee != nullptr && callee->function &&
                               (edge.kind == EdgeKind::jump ||
                                (edge.kind == EdgeKind::tail_jump && split_part_of(va, *callee)));
        if (into_part) {
          if (seen.insert(callee->va).second) parts.push_back(callee->va);
        } else if (edge.kind != EdgeKind::jump) {
          edges.push_back({&edge, callee});
        }
      }
    }
    std::stable_sort(edges.begin(), edges.end(),
                     [](const Edge& a, const Edge& b) { return a.edge->site_va < b.edge->site_va; });
    return edges;
  }

  bool on_path(int index, uint64_t va) const {
    for (; index >= 0; index = nodes_[static_cast<size_t>(index)].parent) {
      if (nodes_[static_cast<size_t>(index)].va == va) return true;
    }
    return false;
  }

  bool traced(const ShowNode& node) const {
    if (!traced_.known) return true;
    if (node.kind == ShowNodeKind::function && traced_.functions.count(node.va)) return true;
    return std::any_of(node.sites.begin(), node.sites.end(),
                       [&](uint64_t site) { return traced_.call_sites.count(site) > 0; });
  }

  Result<void> expand(int index) {
    if (nodes_[static_cast<size_t>(index)].depth >= depth_) {
      nodes_[static_cast<size_t>(index)].state = NodeState::depth_limit;
      return {};
    }
    const auto edges = edges_of(nodes_[static_cast<size_t>(index)].va);
    if (!edges) {
      nodes_[static_cast<size_t>(index)].state = NodeState::failed;
      return {};
    }
    std::map<uint64_t, int> by_target;
    for (const Edge& edge : *edges) {
      if (nodes_.size() >= kMaxNodes) {
        return make_error(ErrorCode::invalid_argument, "the callee tree exceeds " + std::to_string(kMaxNodes) + " nodes",
                          "ask for a smaller --depth");
      }
      int child = -1;
      if (edge.callee == nullptr) {
        ShowNode site;
        site.kind = ShowNodeKind::indirect_site;
        site.name = "[indirect]";
        site.operand = edge.edge->target.operand;
        child = add_node(std::move(site), index);
      } else if (auto known = by_target.find(edge.callee->va); known != by_target.end()) {
        child = known->second;
        nodes_[static_cast<size_t>(child)].tail &= edge.edge->kind == EdgeKind::tail_jump;
      } else {
        ShowNode callee;
        callee.va = edge.callee->va;
        callee.name = function_name(*edge.callee);
        callee.tail = edge.edge->kind == EdgeKind::tail_jump;
        callee.state = on_path(index, callee.va) ? NodeState::recursive : edge.callee->state;
        child = add_node(std::move(callee), index);
        by_target.emplace(edge.callee->va, child);
      }
      nodes_[static_cast<size_t>(child)].sites.push_back(edge.edge->site_va);
    }
    const std::vector<int> children = nodes_[static_cast<size_t>(index)].children;
    for (int child : children) {
      ShowNode& node = nodes_[static_cast<size_t>(child)];
      node.traced = traced(node);
      // The one-level tree left plain functions at its depth limit: expand them.
      if (node.kind == ShowNodeKind::function && node.state == NodeState::depth_limit) {
        node.state = NodeState::expanded;
        if (auto expanded = expand(child); !expanded) return expanded;
      }
    }
    return {};
  }

  int add_node(ShowNode node, int parent) {
    node.parent = parent;
    node.depth = nodes_[static_cast<size_t>(parent)].depth + 1;
    const int index = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(node));
    nodes_[static_cast<size_t>(parent)].children.push_back(index);
    return index;
  }

  const ElfImage& image_;
  const int depth_;
  const TracedProbes& traced_;
  std::vector<ShowNode>& nodes_;
  std::map<uint64_t, Result<CalleeTree>> levels_;     // function start -> its one-level tree
  std::map<std::pair<uint64_t, uint64_t>, bool> split_parts_;  // (caller, target) -> is_split_part
};

// One entry event, as matching needs it.
struct Call {
  uint64_t target_va = 0;
  std::string symbol;
  std::string module;
  std::optional<uint64_t> site;
  bool indirect = false;
};

// Walks the window's events, keeping per depth the node of the open call,
// and counts each entry on the node its caller's node expects.
class CallMatcher {
 public:
  explicit CallMatcher(WindowTree& tree) : tree_(tree) {}

  void run(const nlohmann::json& events) {
    // --functions mode: the frame a tail_exit just left, whose tail target
    // enters next at the same depth.
    bool after_tail_exit = false;
    int tail_from = kOutside;
    for (const auto& event : events) {
      const std::string kind = saved_text(event, "kind");
      const size_t depth = event["depth"].get<size_t>();
      if (kind == "entry") {
        int caller = kOutside;
        bool tail = false;
        if (event.value("tail_call", false)) {  // call-site mode: the jumping frame is at this depth
          tail = true;
          if (depth < frames_.size()) caller = frames_[depth];
        } else if (after_tail_exit && depth == frames_.size()) {
          tail = true;
          caller = tail_from;
        } else if (depth > 0 && depth <= frames_.size()) {
          caller = frames_[depth - 1];
        }
        const int entered = depth == 0 && !tail ? enter_root(event) : enter(caller, call_of(event));
        frames_.resize(depth, kOutside);
        frames_.push_back(entered);
        after_tail_exit = false;
      } else if (kind != "stop") {
        after_tail_exit = kind == "tail_exit" && depth < frames_.size();
        if (after_tail_exit) tail_from = frames_[depth];
        if (depth < frames_.size()) frames_.resize(depth);
      }
    }
  }

 private:
  static Call call_of(const nlohmann::json& event) {
    Call call;
    call.target_va = va_of(event, "target_va").value_or(0);
    call.symbol = saved_text(event, "symbol");
    call.module = saved_text(event, "module");
    call.site = va_of(event, "call_site_va");
    call.indirect = event.value("indirect", false);
    return call;
  }

  ShowNode& node(int index) { return tree_.nodes[static_cast<size_t>(index)]; }

  static void count(ShowNode& node, const Call& call) {
    ++node.calls;
    if (call.site) ++node.calls_by_site[*call.site];
  }

  int enter_root(const nlohmann::json& event) {
    const Call call = call_of(event);
    if (call.target_va != tree_.root_va || !call.module.empty()) {
      ++tree_.calls_outside_root;
      return kOutside;
    }
    count(node(0), call);
    return 0;
  }

  // A recursive node stands for its ancestor: calls inside the recursion
  // are matched against the ancestor's callees.
  int consaved_text(int index) {
    if (node(index).state != NodeState::recursive) return index;
    for (int up = node(index).parent; up >= 0; up = node(up).parent) {
      if (node(up).va == node(index).va && node(up).state == NodeState::expanded) return up;
    }
    return index;
  }

  int enter(int caller, const Call& call) {
    if (caller == kOutside) {
      ++tree_.calls_outside_root;
      return kOutside;
    }
    const int context = caller == kBelow ? kBelow : consaved_text(caller);
    if (context == kBelow || node(context).depth >= tree_.depth) {
      ++tree_.calls_below_depth;
      return kBelow;
    }
    int parent = context;
    if (call.site) {
      for (int child : node(context).children) {
        if (node(child).kind == ShowNodeKind::indirect_site && node(child).sites.front() == *call.site) parent = child;
      }
    }
    int found = parent == context ? static_callee(context, call) : -1;
    if (found < 0) found = observed_callee(parent, call);
    if (parent != context) count(node(parent), call);
    count(node(found), call);
    return found;
  }

  bool same_function(const ShowNode& candidate, const Call& call) const {
    if (candidate.kind != ShowNodeKind::function) return false;
    if (call.module.empty()) return candidate.va == call.target_va;
    // A call into another module's function through this binary's PLT stub.
    return candidate.state == NodeState::external && candidate.name == call.symbol + "@plt";
  }

  // The static callee of `context` that `call` enters: a direct callee, or
  // (when the trace says which calls it could see) one reached through
  // callees that were not traced, as --functions mode reports them. Where
  // several fit, the one whose call instruction the call came from.
  int static_callee(int context, const Call& call) {
    std::deque<int> pending(node(context).children.begin(), node(context).children.end());
    int first = -1;
    while (!pending.empty()) {
      const int candidate = pending.front();
      pending.pop_front();
      const ShowNode& found = node(candidate);
      if (same_function(found, call)) {
        if (!call.site || std::find(found.sites.begin(), found.sites.end(), *call.site) != found.sites.end()) {
          return candidate;
        }
        if (first < 0) first = candidate;
      }
      if (tree_.traced_known && found.traced == false && found.kind == ShowNodeKind::function) {
        pending.insert(pending.end(), found.children.begin(), found.children.end());
      }
    }
    return first;
  }

  int observed_callee(int parent, const Call& call) {
    for (int child : node(parent).children) {
      const ShowNode& existing = node(child);
      if (existing.kind == ShowNodeKind::observed && existing.va == call.target_va && existing.module == call.module) {
        return child;
      }
    }
    ShowNode observed;
    observed.kind = ShowNodeKind::observed;
    observed.va = call.target_va;
    observed.name = call.symbol.empty() ? to_hex(call.target_va) : call.symbol;
    observed.module = call.module;
    observed.parent = parent;
    // An indirect site is no call of its own: its targets are at its level.
    observed.depth = node(parent).kind == ShowNodeKind::indirect_site ? node(parent).depth : node(parent).depth + 1;
    observed.traced = true;
    const int index = static_cast<int>(tree_.nodes.size());
    tree_.nodes.push_back(std::move(observed));
    node(parent).children.push_back(index);
    return index;
  }

  // Frames without a node: calls outside the start function's call, and
  // calls deeper than the tree.
  static constexpr int kOutside = -1;
  static constexpr int kBelow = -2;

  WindowTree& tree_;
  std::vector<int> frames_;  // per depth, the node of the open call, or kOutside or kBelow
};

// The window's start function: start_va when a function starts there, else
// the target of the first entry (a start inside a function).
Result<uint64_t> root_of(const ElfImage& image, const nlohmann::json& window) {
  const std::optional<uint64_t> start = va_of(window, "start_va");
  if (start && image.function_at(*start) != nullptr) return *start;
  for (const auto& event : window["events"]) {
    if (saved_text(event, "kind") != "entry") continue;
    const std::optional<uint64_t> first = va_of(event, "target_va");
    if (first && saved_text(event, "module").empty() && image.function_at(*first) != nullptr) return *first;
    break;
  }
  const std::string what = start ? "start VA " + to_hex(*start) : "the window's start";
  return make_error(ErrorCode::invalid_argument,
                    "window " + std::to_string(window["window_id"].get<uint64_t>()) + ": " + what +
                        " is no function of " + image.path(),
                    "--tree needs a window that starts at a function of the traced build; without --tree the "
                    "window prints as it is");
}

}  // namespace

Result<WindowTree> window_tree(const ElfImage& image, const nlohmann::json& window, int depth,
                               const TracedProbes& traced) {
  auto root = root_of(image, window);
  if (!root) return root.error();
  WindowTree tree;
  tree.root_va = *root;
  tree.depth = depth;
  tree.traced_known = traced.known;
  if (auto built = StaticPart(image, depth, traced, tree.nodes).add_root(*image.function_at(*root)); !built) {
    return built.error();
  }
  CallMatcher(tree).run(window["events"]);
  return tree;
}

}  // namespace xref
