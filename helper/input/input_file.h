// Files a user names for xref to read: a saved trace, a --mark-file (at
// start and again after a rotation), --bin, the executable a saved trace
// names for `trace show --tree`. Opened through user_files.h (with the sudo
// user's rights under sudo, never blocking: open() of a FIFO with no writer
// would wait forever) and refused unless they are regular files (a device
// such as /dev/zero never ends, a directory or a FIFO is no log, trace or
// binary).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "elf_image.h"
#include "input/user_files.h"
#include "result.h"
#include "unique_fd.h"

namespace xref {

struct InputFile {
  UniqueFd fd;  // blocking again
  uint64_t size = 0;
  FileIdentity identity;
};

// Errors: "cannot read WHAT PATH: REASON" (permission_denied when the user
// may not open it, else file_error), or file_error "WHAT PATH is not a
// regular file (it is a FIFO)"; `what` names the file's role
// ("--mark-file"), or is empty.
Result<InputFile> open_regular_file(const std::string& path, const std::string& what);

// The ELF image at `path` (--bin, a saved trace's executable), opened as
// above. Errors: "PATH: REASON" (permission_denied, file_error), file_error
// "PATH is not a regular file (it is a directory)", elf_error.
Result<ElfImage> open_user_elf(const std::string& path);

}  // namespace xref
