#include "cli/command_line.h"

#include "probe/commands.h"
#include "profile/commands.h"
#include "serve/commands.h"
#include "trace/commands.h"
#include "watch/commands.h"

namespace xref {

std::unique_ptr<CLI::App> make_command_line(int& exit_status) {
  auto app = std::make_unique<CLI::App>("xref: ordered, thread-scoped live tracing of native processes", "xref");
  app->set_version_flag("--version", std::string("xref ") + XREF_VERSION);
  app->require_subcommand(1);
  app->fallthrough(false);
  setup_one_shot_commands(*app, exit_status);
  setup_trace(*app, exit_status);
  setup_probe(*app, exit_status);
  setup_watch(*app, exit_status);
  setup_profile(*app, exit_status);
  setup_serve(*app, exit_status);
  setup_manual_commands(*app, exit_status);
  add_command_notes(*app);
  return app;
}

}  // namespace xref
