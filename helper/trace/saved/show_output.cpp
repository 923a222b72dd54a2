// trace show --tree: the text and JSON of a window's tree (docs/trace.md,
// "Expected vs called").
#include <sstream>

#include "hex.h"
#include "trace/saved/show.h"
#include "render/name_labels.h"
#include "render/window_text.h"

namespace xref {
namespace {

struct TreeCounts {
  uint64_t static_callees = 0;  // function nodes below the root
  uint64_t called = 0;
  uint64_t not_called = 0;      // traced, and no call seen
  uint64_t not_traced = 0;      // the trace could not have seen the call
  uint64_t indirect_sites = 0;
  uint64_t indirect_targets = 0;   // distinct targets seen at indirect sites
  uint64_t not_in_static_tree = 0; // distinct other calls seen
};

TreeCounts counts_of(const WindowTree& tree) {
  TreeCounts counts;
  for (size_t index = 1; index < tree.nodes.size(); ++index) {
    const ShowNode& node = tree.nodes[index];
    switch (node.kind) {
      case ShowNodeKind::function:
        ++counts.static_callees;
        if (node.calls > 0) ++counts.called;
        else if (node.traced == false) ++counts.not_traced;
        else ++counts.not_called;
        break;
      case ShowNodeKind::indirect_site: ++counts.indirect_sites; break;
      case ShowNodeKind::observed:
        if (tree.nodes[static_cast<size_t>(node.parent)].kind == ShowNodeKind::indirect_site) ++counts.indirect_targets;
        else ++counts.not_in_static_tree;
        break;
    }
  }
  return counts;
}

// "called 3", "(not called)" or "(not traced)".
std::string call_status(const ShowNode& node) {
  if (node.calls > 0) return "called " + std::to_string(node.calls);
  return node.traced == false ? "(not traced)" : "(not called)";
}

std::string markers(const ShowNode& node, const WindowTree& tree) {
  std::string text;
  if (node.kind == ShowNodeKind::observed) {
    const bool at_indirect_site = tree.nodes[static_cast<size_t>(node.parent)].kind == ShowNodeKind::indirect_site;
    return at_indirect_site ? "" : " [not in static tree]";
  }
  if (node.tail) text += " [tail]";
  switch (node.state) {
    case NodeState::recursive: text += " [recursive]"; break;
    case NodeState::external: text += " [external]"; break;
    case NodeState::not_a_function: text += " [not a function]"; break;
    case NodeState::failed: text += " [not disassembled]"; break;
    case NodeState::expanded:
    case NodeState::depth_limit: break;
  }
  return text;
}

// The call sites: those the calls came from (with counts when there are
// several), or for a callee never called, the static ones.
std::string sites_text(const ShowNode& node) {
  std::string text;
  if (node.kind == ShowNodeKind::indirect_site) return text;
  if (node.calls_by_site.empty()) {
    for (uint64_t site : node.sites) text += "  @" + to_hex(site);
    return text;
  }
  for (const auto& [site, calls] : node.calls_by_site) {
    text += "  @" + to_hex(site);
    if (node.calls_by_site.size() > 1) text += " x" + std::to_string(calls);
  }
  return text;
}

std::string node_line(const ShowNode& node, const WindowTree& tree, const render::NameLabels& labels, size_t level) {
  std::ostringstream line;
  line << std::string(2 * level, ' ');
  if (node.kind == ShowNodeKind::indirect_site) {
    line << "@" << to_hex(node.sites.front()) << " [indirect] call " << node.operand;
  } else {
    line << (node.module.empty() ? "" : node.module + ":") << to_hex(node.va) << " " << labels(node.name);
  }
  line << markers(node, tree) << "  " << call_status(node) << sites_text(node);
  return line.str();
}

void print_nodes(std::ostream& out, const WindowTree& tree, const render::NameLabels& labels, int index, size_t level) {
  const ShowNode& node = tree.nodes[static_cast<size_t>(index)];
  out << node_line(node, tree, labels, level) << "\n";
  for (int child : node.children) print_nodes(out, tree, labels, child, level + 1);
}

nlohmann::json node_json(const WindowTree& tree, int index) {
  const ShowNode& node = tree.nodes[static_cast<size_t>(index)];
  nlohmann::json json = {{"kind", show_node_kind_name(node.kind)}, {"name", node.name}};
  if (node.kind != ShowNodeKind::indirect_site) json["va"] = to_hex(node.va);
  if (!node.module.empty()) json["module"] = node.module;
  if (node.kind == ShowNodeKind::function) {
    json["state"] = node_state_name(node.state);
    if (index != 0) json["edge"] = node.tail ? "tail_jump" : "call";
  }
  if (node.kind == ShowNodeKind::indirect_site) {
    json["site_va"] = to_hex(node.sites.front());
    json["operand"] = node.operand;
  }
  nlohmann::json static_sites = nlohmann::json::array();
  for (uint64_t site : node.sites) static_sites.push_back(to_hex(site));
  json["static_sites"] = static_sites;
  json["in_static_tree"] = node.in_static_tree();
  json["traced"] = node.traced ? nlohmann::json(*node.traced) : nlohmann::json(nullptr);
  json["called"] = node.calls > 0;
  json["calls"] = node.calls;
  nlohmann::json call_sites = nlohmann::json::array();
  for (const auto& [site, calls] : node.calls_by_site) call_sites.push_back({{"va", to_hex(site)}, {"calls", calls}});
  json["call_sites"] = call_sites;
  nlohmann::json children = nlohmann::json::array();
  for (int child : node.children) children.push_back(node_json(tree, child));
  json["children"] = children;
  return json;
}

std::vector<std::string> names_of(const WindowTree& tree) {
  std::vector<std::string> names;
  for (const ShowNode& node : tree.nodes) names.push_back(node.name);
  return names;
}

}  // namespace

void print_window_tree(std::ostream& out, const nlohmann::json& window, const WindowTree& tree) {
  out << render::window_header(window, {}) << "\n";
  print_nodes(out, tree, render::NameLabels(names_of(tree)), 0, 1);
  const TreeCounts counts = counts_of(tree);
  out << "tree depth " << tree.depth << ": static callees " << counts.static_callees << " (called " << counts.called
      << ", not called " << counts.not_called << ", not traced " << counts.not_traced << "); indirect sites "
      << counts.indirect_sites << " (targets seen " << counts.indirect_targets << "); calls not in the static tree "
      << counts.not_in_static_tree;
  if (tree.calls_below_depth > 0) out << "; calls below depth " << tree.depth << ": " << tree.calls_below_depth;
  if (tree.calls_outside_root > 0) out << "; calls outside the start function: " << tree.calls_outside_root;
  out << "\n";
  if (!tree.traced_known) {
    out << "note: the trace does not say which calls it could see; (not called) may mean not traced\n";
  }
}

nlohmann::json window_tree_json(const nlohmann::json& window, const WindowTree& tree) {
  const TreeCounts counts = counts_of(tree);
  nlohmann::json json = {
      {"window_id", window["window_id"]},
      {"tid", window.value("tid", nlohmann::json())},
      {"status", window.value("status", nlohmann::json())},
      {"possible_loss", window.value("possible_loss", false)},
      {"start_va", window.value("start_va", nlohmann::json())},
      {"root_va", to_hex(tree.root_va)},
      {"depth", tree.depth},
      {"traced_known", tree.traced_known},
      {"counts",
       {{"static_callees", counts.static_callees},
        {"called", counts.called},
        {"not_called", counts.not_called},
        {"not_traced", counts.not_traced},
        {"indirect_sites", counts.indirect_sites},
        {"indirect_targets", counts.indirect_targets},
        {"not_in_static_tree", counts.not_in_static_tree},
        {"calls_below_depth", tree.calls_below_depth},
        {"calls_outside_root", tree.calls_outside_root}}},
      {"tree", node_json(tree, 0)},
  };
  return json;
}

}  // namespace xref
