// `xref profile` in a debugger (docs/profile.md, "In a debugger"): the
// CLI's capture options (add_profile_options) and --until-stop; without
// --duration the capture runs until the debugger's next stop, which ends
// it either way. Its report, annotate and diff are the CLI's, over the
// session's last capture when no file is named.
#pragma once

#include <CLI/CLI.hpp>

#include "profile/request.h"
#include "result.h"

namespace xref::serve {

struct DebuggerProfileOptions : ProfileCommandOptions {
  bool until_stop = false;
};

constexpr const char* kProfileSessionDescription =
    "where the process spends its CPU time while it runs: samples every thread (whole stacks, no frame pointers "
    "needed) until the next stop, which prints the hottest functions; report, annotate, diff";

void add_profile_session_options(CLI::App& command, DebuggerProfileOptions& options);
// The CLI's checks; an empty --out is the helper's own file.
Result<void> validate_profile_session(const ProfileRequest& request);

}  // namespace xref::serve
