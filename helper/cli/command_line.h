// The CLI11 app of the xref command line: every command, the notes its
// help and man page show, and what the man pages and the completion script
// need besides the app. run_cli parses with it; `xref _generate` writes
// the pages and the script from it; the tests read it.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

#include "manual/bash_completion.h"
#include "manual/man_pages.h"

namespace xref {

// The whole app; each command's callback stores its exit status in
// `exit_status`.
std::unique_ptr<CLI::App> make_command_line(int& exit_status);

// Each command's notes (help_notes.h) as its CLI11 footer: what its help
// and page say below the options (command_notes.cpp).
void add_command_notes(CLI::App& app);

// The pages' guides, environment and files (manual_site.cpp); `doc_dir`
// is where the guides are installed.
manual::ManualSite manual_site(const std::string& doc_dir);
manual::CompletionSite completion_site();

// _generate, _complete (hidden: CLI11 group "") and `completion`
// (cmd_manual.cpp); `app` is the whole app, read when they run.
void setup_manual_commands(CLI::App& app, int& exit_status);

}  // namespace xref
