#include "render/profile_frames.h"

#include <string_view>

#include "xprof/frames.h"

namespace xref::render {
Result<void> check_picture_input(const Profile& profile) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::capture_format, "the profile is inconsistent: " + what,
                      "write the capture again; a .xprof file is checked when it is read");
  };
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    if (profile.samples[i].stack >= profile.stacks.size()) return bad("samples[" + std::to_string(i) + "].stack");
  }
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    for (uint32_t location : profile.stacks[i].locations) {
      if (location >= profile.locations.size()) return bad("stacks[" + std::to_string(i) + "].locations");
    }
    if (std::string_view(stack_end_name(profile.stacks[i].end)) == "unknown") {
      return bad("stacks[" + std::to_string(i) + "].end");
    }
  }
  for (size_t i = 0; i < profile.locations.size(); ++i) {
    const ProfileLocation& location = profile.locations[i];
    if ((location.function && *location.function >= profile.functions.size()) ||
        (location.module != kNoModule && location.module >= profile.modules.size())) {
      return bad("locations[" + std::to_string(i) + "]");
    }
  }
  return {};
}

std::string module_file_name(const Profile& profile, uint32_t module) {
  if (module >= profile.modules.size()) return "(no module)";
  const std::string& path = profile.modules[module].path;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string incomplete_marker(StackEnd end) { return std::string("[incomplete: ") + stack_end_name(end) + "]"; }

ProfileFrameNames::ProfileFrameNames(const Profile& profile) : profile_(profile) {
  location_names_.reserve(profile.locations.size());
  for (const ProfileLocation& location : profile.locations) {
    if (location.function && *location.function < profile.functions.size()) {
      location_names_.push_back(profile.functions[*location.function].name);
    } else {
      location_names_.push_back(address_frame_name(profile, location.module, location_named_address(location)));
    }
  }
  for (const ProfileStack& stack : profile.stacks) {
    if (!stack_is_whole(stack.end)) markers_.emplace(stack.end, incomplete_marker(stack.end));
  }
}

std::vector<PictureFrame> ProfileFrameNames::path(const ProfileStack& stack) const {
  std::vector<PictureFrame> frames;
  frames.reserve(stack.locations.size() + 2);
  if (!stack_is_whole(stack.end)) {
    frames.push_back({&markers_.at(stack.end), FrameKind::incomplete, kNoModule});
  }
  for (auto it = stack.locations.rbegin(); it != stack.locations.rend(); ++it) {
    const ProfileLocation& location = profile_.locations.at(*it);
    const bool named = location.function && *location.function < profile_.functions.size();
    frames.push_back({&location_names_.at(*it), named ? FrameKind::function : FrameKind::address, location.module});
  }
  if (stack.in_kernel) frames.push_back({&kernel_, FrameKind::kernel, kNoModule});
  if (frames.empty()) frames.push_back({&no_frames_, FrameKind::incomplete, kNoModule});
  return frames;
}

}  // namespace xref::render
