// Under sudo xref acts for the user who ran sudo (docs/cli.md,
// "Privileges"): every command and session opens only processes that user
// could ptrace, as `xref serve` always did. open_target checks it for every
// target; plain root (no SUDO_UID, or SUDO_UID 0) may open any process.
#pragma once

#include <sys/types.h>

#include <string_view>

#include "input/sudo_user.h"
#include "result.h"

namespace xref {

// What ptrace demands of a target, read from /proc/PID/status text (its
// Uid: and Gid: lines) and whether the process is dumpable: real,
// effective and saved uid all the user's (a set-user-ID program that
// dropped to the user's uid but keeps saved uid 0 is not the user's); real,
// effective and saved gid one gid, of the user's groups; dumpable.
// sudo_user_cannot_ptrace naming the id that differs, with a hint;
// permission_denied when the status has no Uid or Gid line.
Result<void> check_owner_in_status(std::string_view status, bool dumpable, pid_t pid, const SudoUser& user);

// Under sudo, check_owner_in_status for a live process; nothing otherwise.
Result<void> check_target_owner(pid_t pid);

}  // namespace xref
