#include <iostream>
#include <memory>

#include "output/report.h"
#include "profile/commands.h"

namespace xref {

void setup_profile(CLI::App& app, int& exit_status) {
  CLI::App* command = app.add_subcommand(
      "profile", "where a process spends its CPU time: samples every thread, with whole stacks unwound in BPF "
                 "(no frame pointers needed), into a .xprof capture; reports, annotate, diff, flame graphs");
  // Hidden (no manual page, no completion) until the capture exists; then it
  // gets its examples, its guide (docs/profile.md) and its place in the lists.
  command->group("");
  setup_profile_offline(*command, exit_status);
  command->callback([command, &exit_status] {
    if (!command->get_subcommands().empty()) return;
    // The capture itself comes with issue 27's capture engine.
    std::cerr << "xref: profile capture is not built yet\n";
    exit_status = 2;
  });
}

}  // namespace xref
