// The tree a flame graph draws: every distinct path of frame names (as
// render/profile_frames.h names them) merged from the root, each node
// holding the samples of every stack through it, children in name order,
// laid out along the sample axis (a node starts where its previous sibling
// ends, its first child where it starts). Node 0 is the root, "all".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "render/profile_frames.h"

namespace xref::render {

struct FlameNode {
  std::string name;
  FrameKind kind = FrameKind::function;
  uint32_t module = kNoModule;  // of the first location merged into the node
  uint32_t depth = 0;           // the root is 0
  uint64_t samples = 0;         // every sample whose path passes through the node
  uint64_t offset = 0;          // start on the sample axis
  uint32_t parent = 0;
  std::vector<uint32_t> children;  // in name order
};

// Nodes in depth-first order: a node's subtree follows it.
std::vector<FlameNode> flame_tree(const Profile& profile, const ProfileFrameNames& names);

}  // namespace xref::render
