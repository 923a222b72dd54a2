// Leftovers of tracefs helpers that died without cleaning up (SIGKILL, a
// crash): their instance xref-<PID> and their uprobe event group xref_<PID>.
// Removed when PID is not a live xref helper; nothing else is touched.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tracefs_fs.h"

namespace xref {

// /proc/PID exists and its comm is "xref", or it runs this executable
// (a helper started under another name).
bool is_live_xref_helper(pid_t pid);

// "xref_123" (prefix "xref_") or "xref-123" (prefix "xref-") -> 123; 0 otherwise.
pid_t xref_owner_pid(const std::string& name, const std::string& prefix);

struct ReapReport {
  std::vector<std::string> instances;  // removed
  std::vector<std::string> groups;     // removed (every event of the group)
  std::vector<std::string> failures;   // what could not be removed, and why
};

// Reaps the leftovers of dead helpers, and any of `self` (a dead helper
// whose PID this process now has).
ReapReport reap_tracefs_leftovers(const Tracefs& tracefs, pid_t self);

}  // namespace xref
