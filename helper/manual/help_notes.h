// What a command's `--help` shows below its options, and its man page
// holds too: paragraphs about the command, examples from its guide, and
// its exit statuses where they are not the common ones. Kept as the CLI11
// footer in one text shape, written by footer_text and read back by
// parse_footer, so the help and the page cannot say different things.
#pragma once

#include <string>
#include <vector>

namespace xref::manual {

struct Example {
  std::string command;  // one line, as typed: "xref probe --pid 3158 validate apply_fee --callers"
  std::string what;     // what it does, one line
};

struct ExitStatus {
  int status = 0;
  std::string meaning;
};

struct HelpNotes {
  std::vector<std::string> paragraphs;  // each one line of text
  std::vector<Example> examples;
  std::vector<ExitStatus> exit_statuses;  // empty: the common table (exit_statuses.h)
};

// The footer: the paragraphs, then "Examples:" with each command indented
// by two spaces and its explanation by six, then "Exit status:" with
// "  N  meaning" lines.
std::string footer_text(const HelpNotes& notes);

// footer_text's inverse; text in another shape is kept as paragraphs.
HelpNotes parse_footer(const std::string& footer);

}  // namespace xref::manual
