// The man pages of a command tree: xref.1, the overview (every command one
// line, the program's options, exit statuses, environment, files), and one
// page per command and nested command (xref-trace.1, xref-trace-diff.1).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "manual/command_tree.h"

namespace xref::manual {

// What the pages say that is not in the command tree.
struct ManualSite {
  std::string version;  // "0.1.0"
  std::string doc_dir;  // where the guides are installed: "/usr/share/doc/xref"
  // Each top-level command's guide in doc_dir ("trace" → "trace.md").
  std::vector<std::pair<std::string, std::string>> guides;
  // The overview's ENVIRONMENT and FILES: name, meaning.
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::pair<std::string, std::string>> files;
};

struct ManPage {
  std::string file_name;  // "xref-trace-diff.1"
  std::string text;
};

// `root` is the program (command_tree of the whole app).
std::vector<ManPage> man_pages(const CommandEntry& root, const ManualSite& site);

// "xref-trace-diff": the page name of a command.
std::string page_name(const CommandEntry& command);

}  // namespace xref::manual
