// The file path a uprobe_events line names. The kernel resolves it when the
// event is defined, so it must be a path the kernel can open from the
// helper's mount namespace that leads to the very inode the target maps.
#pragma once

#include <sys/types.h>

#include <string>

#include "address_space.h"
#include "result.h"

namespace xref {

// Tries, in order: the executable's real path (readlink of /proc/PID/exe),
// the same path under /proc/PID/root (another mount namespace), and
// /proc/PID/exe itself, which the kernel follows to the mapped file even
// when it was deleted. Each is accepted only when stat() shows the device
// and inode of the file the process maps, and it has no whitespace (the
// uprobe_events syntax splits on it).
Result<std::string> tracefs_probe_path(const Module& module, pid_t pid);

}  // namespace xref
