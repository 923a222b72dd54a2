// tracefs itself: where it is mounted, and its control files read and
// written with errors as values. Writes never truncate: a truncating open of
// uprobe_events deletes every uprobe event on the host, not just ours.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace xref {

class Tracefs {
 public:
  // The mounted tracefs that offers uprobe_events (/sys/kernel/tracing, or
  // the debugfs path of older systems).
  static Result<Tracefs> open();
  explicit Tracefs(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string path(std::string_view relative) const { return root_ + "/" + std::string(relative); }

  Result<std::string> read(std::string_view relative) const;
  // Writes `text` in one write(2), as the kernel parses one write at a time.
  Result<void> write(std::string_view relative, std::string_view text) const;
  // Appends (O_APPEND): the only way uprobe_events is ever written.
  Result<void> append(std::string_view relative, std::string_view text) const;
  bool exists(std::string_view relative) const;
  // Names in a directory (no "." or ".."); empty when it cannot be read.
  std::vector<std::string> list(std::string_view relative) const;
  Result<void> make_directory(std::string_view relative) const;
  Result<void> remove_directory(std::string_view relative) const;
  // The kernel's last parse error for a dynamic event command, "" if none.
  std::string last_error_log_line() const;

 private:
  std::string root_;
};

// An Error for a failed system call on a tracefs file: permission_denied
// for EACCES/EPERM, file_error otherwise.
Error tracefs_error(const std::string& what, const std::string& path, int error_number);

}  // namespace xref
