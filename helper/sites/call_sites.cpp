#include "sites/call_sites.h"

namespace xref {
namespace {

bool is_conditional(const FunctionCode& code, uint64_t va) {
  for (const ExitJump& exit : code.exits) {
    if (exit.va == va) return exit.conditional;
  }
  return false;
}

}  // namespace

Result<NodeCallSites> node_call_sites(SplitParts& split, uint32_t module_index, const ElfImage& image,
                                      const CalleeTree& tree, const CalleeNode& node, std::set<uint64_t>& listed) {
  NodeCallSites listing;
  auto code = disassemble(image, *node.function);
  if (!code) return code.error();
  listing.codes.push_back(std::move(*code));
  for (const CalleeEdge& edge : node.edges) {
    NodeCallSite site{edge, 0, node.va, node.function->demangled};
    if (edge.kind == EdgeKind::tail_jump) {
      site.into_split_part = split.is_split_part(module_index, image, listing.codes.front(), edge.target.va);
      site.conditional = !site.into_split_part && is_conditional(listing.codes.front(), edge.site_va);
    }
    listing.sites.push_back(std::move(site));
    if ((edge.kind != EdgeKind::jump && edge.kind != EdgeKind::tail_jump) || edge.child < 0) continue;
    const CalleeNode& part = tree.nodes[static_cast<size_t>(edge.child)];
    if (!part.function || !split.is_split_part(module_index, image, listing.codes.front(), part.va) ||
        !listed.insert(part.va).second) {
      continue;
    }
    auto part_tree = callee_tree(image, part.va, 1, 1000);
    auto part_code = disassemble(image, *part.function);
    if (!part_tree || !part_code) continue;
    listing.codes.push_back(std::move(*part_code));
    const CalleeNode& part_node = part_tree->nodes[0];
    for (const CalleeEdge& part_edge : part_node.edges) {
      NodeCallSite part_site{part_edge, listing.codes.size() - 1, part_node.va, part_node.function->demangled};
      part_site.in_split_part = true;
      listing.sites.push_back(std::move(part_site));
    }
  }
  return listing;
}

}  // namespace xref
