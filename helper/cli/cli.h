// The xref command line: one CLI11 app with a subcommand per operation.
#pragma once

namespace xref {

int run_cli(int argc, char** argv);

}  // namespace xref
