// --by caller: the distinct call paths, root to leaf, by function (two
// stacks through different lines of the same functions are one path), with
// their samples; a stack that is not whole keeps how it ended, since its
// root is not the real one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xprof/frames.h"
#include "xprof/selection.h"

namespace xref {

struct CallerPath {
  std::vector<FrameKey> frames;  // root first; `[kernel]` last for kernel-mode samples
  std::vector<std::string> names;
  std::string end = "complete";  // stack_end_name of its stacks: anything but complete/leaf_only cut the root off
  uint64_t samples = 0;
};

// Every path with a sample, most samples first (then by names).
std::vector<CallerPath> caller_paths(const Profile& profile, const ProfileSelection& selection);

}  // namespace xref
