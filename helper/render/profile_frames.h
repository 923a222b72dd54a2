// The frames of a profile's stacks as the pictures name them (folded
// stacks, the flame graph, pprof's extra locations), so that the three say
// the same thing:
// - a location is named by its function (demangled), else by its module's
//   file name and the static VA, `libc.so.6+0x2a1c0`; a return address by
//   its call instruction (address - 1: xprof's location_named_address, as
//   the reports name it), where the function is decided too;
//   code in no module by its live address, `[unknown 0x7ffd5c1e2a10]`;
// - a sample taken in kernel mode has a `[kernel]` frame above its leaf;
// - a stack that is not whole starts with a marker naming why,
//   `[incomplete: no_cfi]`, so its samples stay visible and its first real
//   frame is not taken for a root; a stack without any frame is
//   `[no frames]`, so every sample has a path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "result.h"
#include "xprof/frames.h"
#include "xprof/profile.h"

namespace xref::render {

enum class FrameKind { function, address, kernel, incomplete };

struct PictureFrame {
  const std::string* name = nullptr;  // owned by ProfileFrameNames
  FrameKind kind = FrameKind::function;
  uint32_t module = kNoModule;
};

std::string incomplete_marker(StackEnd end);

// A module as pictures name it: its file name ("libc.so.6"), or
// "(no module)" for kNoModule.
std::string module_file_name(const Profile& profile, uint32_t module);

// Every index the pictures follow (sample -> stack -> location -> function,
// module) is inside its table: capture_format naming the first that is not.
// The .xprof reader checks the same; a Profile built in code is checked here.
Result<void> check_picture_input(const Profile& profile);
inline constexpr const char* kKernelFrame = "[kernel]";
inline constexpr const char* kNoFramesFrame = "[no frames]";

class ProfileFrameNames {
 public:
  explicit ProfileFrameNames(const Profile& profile);

  // Root first: the incomplete marker, the outermost frame ... the leaf, [kernel].
  std::vector<PictureFrame> path(const ProfileStack& stack) const;
  const std::string& location_name(uint32_t location) const { return location_names_.at(location); }

 private:
  const Profile& profile_;
  std::vector<std::string> location_names_;
  std::map<StackEnd, std::string> markers_;  // of the ends the profile's stacks have
  std::string kernel_ = kKernelFrame;
  std::string no_frames_ = kNoFramesFrame;
};

}  // namespace xref::render
