#include "xprof/caller_report.h"

#include <algorithm>
#include <map>
#include <utility>

namespace xref {

std::vector<CallerPath> caller_paths(const Profile& profile, const ProfileSelection& selection) {
  std::map<std::pair<std::vector<FrameKey>, std::string>, uint64_t> counted;
  for (size_t index = 0; index < profile.stacks.size(); ++index) {
    const uint64_t count = selection.counts[index];
    if (count == 0) continue;
    const ProfileStack& stack = profile.stacks[index];
    // Whole stacks (complete, leaf_only) differ only by --callers: one kind.
    const std::string end = stack_is_whole(stack.end) ? "complete" : stack_end_name(stack.end);
    counted[{stack_path(profile, stack), end}] += count;
  }
  std::vector<CallerPath> paths;
  paths.reserve(counted.size());
  for (const auto& [key, samples] : counted) {
    CallerPath path{key.first, {}, key.second, samples};
    for (const FrameKey& frame : path.frames) path.names.push_back(frame_name(profile, frame));
    if (profile.capture.callers == "none" && path.end == "complete") path.end = "leaf_only";
    paths.push_back(std::move(path));
  }
  std::sort(paths.begin(), paths.end(), [](const CallerPath& a, const CallerPath& b) {
    if (a.samples != b.samples) return a.samples > b.samples;
    return a.names < b.names;
  });
  return paths;
}

}  // namespace xref
