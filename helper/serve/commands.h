// `xref serve`'s CLI edge (cmd_serve.cpp), and the commands that answer
// once, which the CLI and serve's `command` method both offer.
#pragma once

#include <CLI/CLI.hpp>

#include "doctor/commands.h"
#include "inspect/commands.h"

namespace xref {

void setup_serve(CLI::App& app, int& exit_status);

// maps, resolve, memscan, doctor: the commands that answer once.
inline void setup_one_shot_commands(CLI::App& app, int& exit_status) {
  setup_maps(app, exit_status);
  setup_resolve(app, exit_status);
  setup_memscan(app, exit_status);
  setup_doctor(app, exit_status);
}

}  // namespace xref
