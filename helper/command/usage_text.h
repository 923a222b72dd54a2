// How a CLI11 parse failure reads for a person, the same in the shell and
// in a debugger (xref serve parses the front end's words with the same
// definitions): the command it happened in (`xref trace show`), an unknown
// option with the nearest option of that command ("did you mean
// --duration-ms?"), and that command's help to see.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "result.h"

namespace xref {

// `app`: the parser that failed. The command is its deepest subcommand
// parsed so far, spelled from the parser's own name (`xref`, or `xref
// probe` for a parser of probe's words alone).
Error usage_error(const CLI::ParseError& failure, const CLI::App& app);

// The option of `command` nearest `typed` (`--durration`, `--duration`,
// `--heartbeat=5`): one a typo away (letters swapped, missing, extra or
// wrong: one, or up to a quarter of the name), else the shortest that
// `typed` begins. nullopt when none is near.
std::optional<std::string> nearest_option(const CLI::App& command, const std::string& typed);

// Letters to add, drop, change or swap to turn `a` into `b` (optimal string
// alignment); for short words such as option and command names.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace xref
