// A profile as files other tools read: folded stacks (FlameGraph, inferno,
// speedscope), a flame graph SVG the helper draws itself, and pprof
// (gzipped profile.proto: go tool pprof, Parca, Pyroscope, Perfetto).
// The three name frames alike (render/profile_frames.h); docs/profile.md,
// "Pictures", describes each.
#pragma once

#include <string>

#include "result.h"
#include "xprof/profile.h"

namespace xref::render {

Result<std::string> profile_folded(const Profile& profile);

struct FlameGraphOptions {
  double width = 1200;           // px, the whole picture
  double min_frame_width = 0.25;  // px: narrower frames (and what they hold) are left out and counted
};
Result<std::string> profile_svg(const Profile& profile, const std::string& title,
                                const FlameGraphOptions& options = {});

Result<std::string> profile_pprof(const Profile& profile);  // gzipped bytes

}  // namespace xref::render
