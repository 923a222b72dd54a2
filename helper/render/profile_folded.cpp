// Folded stacks: `root;caller;leaf COUNT`, one line per distinct path of
// frame names, the counts of every thread and every stack that names the
// same path added up, lines sorted so two runs print the same file.
// Frames are named as render/profile_frames.h says. A name's `;` (the
// separator), line breaks and `%` are written %3B, %0A, %0D and %25:
// readers split on every `;`, and percent-encoding keeps the name readable
// and reversible.
#include <map>

#include "render/profile_formats.h"
#include "render/profile_frames.h"

namespace xref::render {
namespace {

void append_folded_name(std::string& out, const std::string& name) {
  for (char c : name) {
    switch (c) {
      case ';': out += "%3B"; break;
      case '\n': out += "%0A"; break;
      case '\r': out += "%0D"; break;
      case '%': out += "%25"; break;
      default: out += c;
    }
  }
}

}  // namespace

Result<std::string> profile_folded(const Profile& profile) {
  if (auto checked = check_picture_input(profile); !checked) return checked.error();
  const ProfileFrameNames names(profile);
  std::vector<std::string> stack_lines(profile.stacks.size());
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    for (const PictureFrame& frame : names.path(profile.stacks[i])) {
      if (!stack_lines[i].empty()) stack_lines[i] += ';';
      append_folded_name(stack_lines[i], *frame.name);
    }
  }
  std::map<std::string, uint64_t> counts;
  for (const ProfileSample& sample : profile.samples) {
    if (sample.count != 0) counts[stack_lines[sample.stack]] += sample.count;
  }
  std::string out;
  for (const auto& [line, count] : counts) {
    out += line;
    out += ' ';
    out += std::to_string(count);
    out += '\n';
  }
  return out;
}

}  // namespace xref::render
