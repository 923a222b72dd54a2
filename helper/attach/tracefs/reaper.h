// Leftovers of tracefs helpers that died without cleaning up and whose
// watchdog could not either (both killed, e.g. by SIGKILL to the process
// group): their instance xref-<PID>-<start> and their uprobe event group
// xref_<PID>_<start>. Removed when that process no longer runs; nothing
// else is touched.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "attach/tracefs/fs.h"
#include "attach/tracefs/owner.h"

namespace xref {

struct ReapReport {
  std::vector<std::string> instances;  // removed
  std::vector<std::string> groups;     // removed (every event of the group)
  std::vector<std::string> failures;   // what could not be removed, and why
};

// Reaps the leftovers of owners that are gone, and any under `self`'s PID
// (a dead helper whose PID this process now has, or an earlier trace of
// this one that could not remove its own).
ReapReport reap_tracefs_leftovers(const Tracefs& tracefs, const TracefsOwner& self);

}  // namespace xref
