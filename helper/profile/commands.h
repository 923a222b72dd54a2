// `xref profile`'s CLI edge: the capture (cmd_profile.cpp) and the offline
// commands over a capture file, `report`, `annotate` and `diff`
// (cmd_offline.cpp). When parsed, runs the command and stores its exit
// status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace xref {

void setup_profile(CLI::App& app, int& exit_status);

// The subcommands of `xref profile` that read a .xprof file.
void setup_profile_offline(CLI::App& profile, int& exit_status);

}  // namespace xref
