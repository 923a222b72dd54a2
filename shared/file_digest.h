// SHA-256 of a file's bytes, to tell an identical copy of a binary from a
// file that merely has the same name.
#pragma once

#include <string>

#include "result.h"

namespace xref {

// Lowercase hex SHA-256 of the file at `path` (which may be /proc/PID/exe).
Result<std::string> sha256_file(const std::string& path);
// The same for a file already open (read from offset 0 with pread, so its
// offset is left alone); `path` only names it in errors.
Result<std::string> sha256_descriptor(int fd, const std::string& path);

}  // namespace xref
