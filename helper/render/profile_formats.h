// A profile as files other tools read: folded stacks (FlameGraph, inferno,
// speedscope), a flame graph SVG the helper draws itself, and pprof
// (gzipped profile.proto: go tool pprof, Parca, Pyroscope, Perfetto).
#pragma once

#include <string>

#include "result.h"
#include "xprof/profile.h"

namespace xref::render {

Result<std::string> profile_folded(const Profile& profile);
Result<std::string> profile_svg(const Profile& profile, const std::string& title);
Result<std::string> profile_pprof(const Profile& profile);  // gzipped bytes

}  // namespace xref::render
