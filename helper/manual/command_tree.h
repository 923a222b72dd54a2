// A CLI11 app read into plain data: every command, its options as CLI11
// holds them (names, value name, default, help, choices), its help notes.
// The man pages and the completion script are written from this, and this
// only from the app the CLI parses with, so neither can drift from it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "manual/help_notes.h"

namespace xref::manual {

struct OptionEntry {
  std::vector<std::string> names;  // "-p", "--pid" as typed; empty for a positional
  std::string positional;          // "file", "address": a positional's name
  std::string value_name;          // "PID", "FILE", "TEXT", "UINT", "TIME"; empty for a flag
  std::string value_range;         // what its checks say about the value: "[1 - 16]"
  int values = 0;                  // words one use takes: 0 for a flag, 2 for --fetch-at VA SPEC
  bool repeats = false;            // a positional or option that takes any number of values
  bool required = false;
  std::string default_value;       // as --help shows it; empty when none is shown
  std::string help;
  std::vector<std::string> choices;  // the one values it takes (command/option_values.h one_of)
  std::vector<std::string> excludes, needs;  // other options' names

  std::string long_name() const;  // "--pid", or the first name
};

struct CommandEntry {
  std::vector<std::string> path;  // {} for the program, {"trace", "diff"}
  std::string description;
  HelpNotes notes;
  std::vector<OptionEntry> options;  // in definition order, --help first; positionals last
  std::vector<CommandEntry> subcommands;  // hidden ones (CLI11 group "") left out

  std::string full_name(const std::string& program, char separator) const;  // "xref trace diff", "xref-trace-diff"
};

// `app` and every visible subcommand under it. Not const: CLI11 2.1 hands
// out an option's validators only through a non-const option.
CommandEntry command_tree(CLI::App& app);

// Every command of the tree, depth first, the program itself first.
std::vector<const CommandEntry*> all_commands(const CommandEntry& root);

}  // namespace xref::manual
