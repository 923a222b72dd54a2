// Files a user names for xref to read (a saved trace, a --mark-file):
// opened without blocking, since open() of a FIFO with no writer waits
// forever, and refused unless they are regular files (a device such as
// /dev/zero never ends, a directory or a FIFO is no log or trace).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "result.h"

namespace xref {

struct InputFile {
  int fd = -1;  // the caller's to close; blocking again
  uint64_t size = 0;
  dev_t dev = 0;
  ino_t ino = 0;
};

// file_error: "cannot read WHAT PATH: REASON", or "WHAT PATH is not a
// regular file (a FIFO)"; `what` names the file's role ("--mark-file").
Result<InputFile> open_regular_file(const std::string& path, const std::string& what);

}  // namespace xref
