// A --mark-file is a log: a file on a filesystem that stores what is
// written to it. A pseudo filesystem's files are regular files too
// (/proc/self/mem, /sys/kernel/...), but reading one reads the kernel or a
// process (memory, counters, control files), and following it as a log
// would show that in marks. Such files are refused by the filesystem's
// magic number (statfs f_type).
#pragma once

#include <string>

#include "result.h"

namespace xref {

// invalid_argument naming `path` and its filesystem when the open file `fd`
// is on procfs, sysfs, debugfs, tracefs, cgroupfs, bpffs, configfs,
// securityfs, efivarfs or another pseudo filesystem that holds no logs.
Result<void> check_log_filesystem(int fd, const std::string& path);

}  // namespace xref
