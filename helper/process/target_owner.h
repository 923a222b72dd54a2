// `xref serve` started through sudo acts for the user who ran sudo: it only
// opens processes that user could ptrace (docs/protocol.md). The rule is set
// once at startup and checked by open_target for every command and session.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

#include "result.h"

namespace xref {

// From now on every target must belong to `uid`. Call before any thread starts.
void restrict_targets_to_uid(uid_t uid);

// permission_denied unless the real, effective and saved uids on the Uid:
// line of /proc/PID/status text all equal `uid` (what ptrace would demand).
Result<void> check_owner_in_status(std::string_view status, pid_t pid, uid_t uid);

// Applies the restriction, if any, to a live process.
Result<void> check_target_owner(pid_t pid);

}  // namespace xref
