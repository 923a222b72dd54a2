#include "cli.h"

#include <CLI/CLI.hpp>

namespace xref {

int run_cli(int argc, char** argv) {
  CLI::App app{"xref: ordered, thread-scoped live tracing for native processes", "xref"};
  app.set_version_flag("--version", std::string("xref ") + XREF_VERSION);
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace xref
