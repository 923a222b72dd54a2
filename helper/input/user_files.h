// Files the user names: --bin, --mark-file, saved traces, trace export's
// -o. This is the one place that opens them (files read as input go
// through input_file.h, which adds its checks to what is opened here).
// Under sudo (sudo_user.h) xref runs as root for a user who is not, so
// each of them is opened with that user's rights: a root-only file stays
// closed, and a path the user cannot reach fails the same way whether or
// not it exists. Outside sudo they are opened directly.
//
// The opening is done by an opener process forked once at startup, before
// any thread: it drops to the user's uid, gid and supplementary groups for
// good (so no capability is left, not even CAP_SYS_PTRACE for /proc files),
// opens each path it is sent and passes the descriptor back over a
// socketpair (SCM_RIGHTS). Everything then reads and writes through that
// descriptor; nothing opens the path again by name.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "input/sudo_user.h"
#include "result.h"
#include "unique_fd.h"

namespace xref {

// From now on every file below is opened as `user`, through an opener
// process started now. Call once, at startup, before any thread starts.
// permission_denied when the opener cannot become the user.
Result<void> act_for_sudo_user(const SudoUser& user);

// The user set by act_for_sudo_user, if any.
const std::optional<SudoUser>& acting_sudo_user();

// open(2) of `path` with `flags` (O_CLOEXEC and O_NOCTTY added) and
// `mode`, with the user's rights. The open never blocks (O_NONBLOCK, taken
// off the descriptor again unless `flags` has it): a FIFO without a writer
// opens at once for reading, and fails (ENXIO) for writing without a
// reader. Errors: permission_denied (EACCES, EPERM) or file_error,
// "PATH: REASON"; internal when the opener is gone.
Result<UniqueFd> open_user_file(const std::string& path, int flags, mode_t mode = 0666);

// stat(2) of `path` with the user's rights: nullopt when the path names
// nothing (ENOENT); other failures as open_user_file.
Result<std::optional<struct stat>> stat_user_file(const std::string& path);

// A file's device and inode: what makes two names the same file.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileIdentity&) const = default;
};

}  // namespace xref
