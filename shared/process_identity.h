// Who a PID is: a pidfd held open, its start time, and the identity of the
// executable it runs (device/inode, SHA-256 of the bytes, build-id). A bare
// number is not enough, because PIDs are reused; recheck() proves that the
// process is still the one first seen.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "result.h"

namespace xref {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t starttime_ticks = 0;  // /proc/PID/stat field 22, clock ticks after boot
  std::string comm;
  uid_t uid = 0;                 // real uid of the target
  std::string exe_path;          // readlink /proc/PID/exe, " (deleted)" removed
  bool exe_deleted = false;
  uint64_t exe_device = 0;
  uint64_t exe_inode = 0;
  std::string exe_sha256;
  std::string build_id;          // empty when the executable has none
  // The name the process was started by when it is not the executable's own
  // (a symlink: /usr/bin/redis-server -> redis-check-rdb): argv[0]'s first
  // word when it names the executable through a link, else comm when comm
  // (the basename execve was given) differs from the executable's; "" when
  // the process was started by the executable's own name.
  std::string started_as;
};

// started_as from the pieces read from /proc (exposed for tests): argv0 is
// cmdline's first string, `resolves_to_exe` whether a path names the
// executable (through the target's root).
std::string started_as_name(const std::string& argv0, const std::string& comm, const std::string& exe_path,
                            const std::function<bool(const std::string&)>& resolves_to_exe);

// /proc/PID/stat fields needed to judge a process (exposed for tests).
struct ProcessStat {
  char state = '?';
  uint64_t flags = 0;
  uint64_t starttime_ticks = 0;
  std::string comm;
};
Result<ProcessStat> parse_proc_stat(std::string_view text);

class ProcessHandle {
 public:
  // Opens a pidfd first, then reads identity, then proves the pidfd still
  // names a live process, so the identity cannot belong to a reused PID.
  static Result<ProcessHandle> open(pid_t pid);

  ProcessHandle(ProcessHandle&& other) noexcept;
  ProcessHandle& operator=(ProcessHandle&& other) noexcept;
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  ~ProcessHandle();

  const ProcessIdentity& identity() const { return identity_; }
  pid_t pid() const { return identity_.pid; }
  int pidfd() const { return pidfd_; }

  // process_exited when it is gone, process_changed when the PID now runs
  // another executable or belongs to another process.
  Result<void> recheck() const;
  bool alive() const;

  // "/proc/PID/exe": opens the executable the process really runs, even if
  // it was deleted or replaced on disk.
  std::string exe_link() const;

 private:
  ProcessHandle() = default;
  int pidfd_ = -1;
  ProcessIdentity identity_;
};

}  // namespace xref
