// Who xref acts for when sudo started it as root on behalf of another user
// (docs/cli.md, "Privileges"): that user's uid, group and supplementary
// groups, from what sudo sets (SUDO_UID, SUDO_GID) and the user database.
// Under sudo, files the user names are opened with these rights
// (user_files.h) and `xref serve` opens only this user's processes
// (target_owner.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "result.h"

namespace xref {

struct SudoUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as a login would set them (initgroups)
};

// SUDO_UID as sudo sets it: nullopt when unset or 0 (root may trace
// anything); an error when it is not a uid.
Result<std::optional<uid_t>> requesting_uid_from_sudo(const char* sudo_uid);

// The user sudo ran xref for, from the values of SUDO_UID and SUDO_GID:
// nullopt unless xref runs with effective uid 0 and SUDO_UID names a user
// other than root. The group is SUDO_GID, else the user's passwd group;
// the supplementary groups are the user's in the group database.
// permission_denied when SUDO_UID or SUDO_GID is not an id, or no group is
// known for the user.
Result<std::optional<SudoUser>> sudo_user_from(const char* sudo_uid, const char* sudo_gid);

}  // namespace xref
