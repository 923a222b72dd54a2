// Whether a process is held still: every thread of it in a stop (a
// debugger's ptrace stop, 't', or a job-control stop, 'T'), so that it runs
// no code until something resumes it.
#pragma once

#include <sys/types.h>

namespace xref {

// True when /proc/PID/task lists threads and each is stopped now.
bool every_thread_stopped(pid_t pid);

}  // namespace xref
