// The uprobe event groups defined in the global uprobe_events file: which
// groups there are, and removing every event of one group, whatever
// defined them (a trace's probes, a dead helper's leftovers). Lines look
// like "p:xref_4242_81234/p0 /path/to/exe:0x1c20 ...".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attach/tracefs/fs.h"

namespace xref {

struct GroupRemoval {
  size_t removed = 0;
  size_t failed = 0;       // still defined (busy: enabled somewhere, or open by perf)
  std::string first_error;
};

// Removes every uprobe event of `group` ("-:group/event" each), whatever
// defined them. Other groups are never touched.
GroupRemoval remove_tracefs_group(const Tracefs& tracefs, const std::string& group);

// The groups that have uprobe events defined now.
std::vector<std::string> tracefs_uprobe_groups(const Tracefs& tracefs);

}  // namespace xref
