#include "render/profile_flame.h"

#include <map>
#include <memory>
#include <string_view>

namespace xref::render {
namespace {

// The tree while it is built: children found by name.
struct Building {
  std::string_view name;
  FrameKind kind = FrameKind::function;
  uint32_t module = kNoModule;
  uint64_t samples = 0;
  std::map<std::string_view, std::unique_ptr<Building>> children;
};

void flatten(const Building& node, uint32_t depth, uint32_t parent, uint64_t offset, std::vector<FlameNode>& out) {
  const auto index = static_cast<uint32_t>(out.size());
  out.push_back({std::string(node.name), node.kind, node.module, depth, node.samples, offset, parent, {}});
  uint64_t child_offset = offset;
  for (const auto& [name, child] : node.children) {
    out[index].children.push_back(static_cast<uint32_t>(out.size()));
    flatten(*child, depth + 1, index, child_offset, out);
    child_offset += child->samples;
  }
}

}  // namespace

std::vector<FlameNode> flame_tree(const Profile& profile, const ProfileFrameNames& names) {
  std::vector<uint64_t> stack_samples(profile.stacks.size(), 0);
  for (const ProfileSample& sample : profile.samples) stack_samples.at(sample.stack) += sample.count;

  Building root{"all", FrameKind::function, kNoModule, 0, {}};
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    if (stack_samples[i] == 0) continue;
    root.samples += stack_samples[i];
    Building* node = &root;
    for (const PictureFrame& frame : names.path(profile.stacks[i])) {
      auto& child = node->children[*frame.name];
      if (!child) child = std::make_unique<Building>(Building{*frame.name, frame.kind, frame.module, 0, {}});
      child->samples += stack_samples[i];
      node = child.get();
    }
  }
  std::vector<FlameNode> nodes;
  flatten(root, 0, 0, 0, nodes);
  return nodes;
}

}  // namespace xref::render
