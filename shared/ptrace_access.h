// When the kernel refuses /proc/PID/exe, maps or mem, its ptrace access
// check said no. Who passes it: the target's own user (if the target is
// dumpable), or root with CAP_SYS_PTRACE, unless a security module or a
// sandbox says otherwise. The error names the case that applies.
#pragma once

#include <sys/types.h>

#include <string>

#include "result.h"

namespace xref {

// What the check depends on, as far as xref can see it.
struct PtraceAccessContext {
  bool root = false;            // effective uid 0
  bool sys_ptrace = false;      // CAP_SYS_PTRACE in the effective set
  bool same_user = false;       // xref's effective uid is the target's real uid
  std::string target_uid;       // "" when /proc/PID/status could not be read
};

// permission_denied for `path` of process `pid`, refused with `error_number`
// (EACCES or EPERM), explained from this process's credentials.
Error ptrace_access_denied(pid_t pid, const std::string& path, int error_number);

// The same from a given context (exposed for tests).
Error ptrace_access_denied(pid_t pid, const std::string& path, int error_number, const PtraceAccessContext& context);

}  // namespace xref
