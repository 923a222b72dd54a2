#include "attach/tracefs/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace xref {

Error tracefs_error(const std::string& what, const std::string& path, int error_number) {
  const bool denied = error_number == EACCES || error_number == EPERM;
  return make_error(denied ? ErrorCode::permission_denied : ErrorCode::file_error,
                    what + ": " + path + ": " + std::strerror(error_number),
                    denied ? "run xref as root (tracefs is writable by root only)" : "");
}

Result<Tracefs> Tracefs::open() {
  // tracefs is mode 0700 root: for anyone else, a mounted tracefs cannot
  // even be looked into, which is not the same as not mounted.
  std::optional<Error> denied;
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    const std::string events = std::string(root) + "/uprobe_events";
    if (access(events.c_str(), F_OK) == 0) return Tracefs(root);
    if ((errno == EACCES || errno == EPERM) && !denied) {
      denied = make_error(ErrorCode::permission_denied,
                          "cannot reach " + events + ": " + std::strerror(errno) + " (tracefs is open to root only)",
                          "run xref as root");
    }
  }
  if (denied) return *denied;
  if (access("/sys/kernel/tracing/README", F_OK) == 0) {
    return make_error(ErrorCode::unsupported, "this kernel has no uprobe_events (CONFIG_UPROBE_EVENTS is off)",
                      "use a BPF backend, or a kernel built with uprobe events");
  }
  return make_error(ErrorCode::unsupported, "tracefs is not mounted: /sys/kernel/tracing/uprobe_events is missing",
                    "mount it: mount -t tracefs nodev /sys/kernel/tracing");
}

Result<std::string> Tracefs::read(std::string_view relative) const {
  const std::string full = path(relative);
  const int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tracefs_error("cannot open", full, errno);
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t count = ::read(fd, buffer, sizeof buffer);
    if (count < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd);
      return tracefs_error("cannot read", full, saved);
    }
    if (count == 0) break;
    text.append(buffer, static_cast<size_t>(count));
  }
  close(fd);
  return text;
}

namespace {

Result<void> write_with(const std::string& full, int flags, std::string_view text) {
  const int fd = ::open(full.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return tracefs_error("cannot open", full, errno);
  ssize_t written;
  do {
    written = ::write(fd, text.data(), text.size());
  } while (written < 0 && errno == EINTR);
  const int saved = errno;
  close(fd);
  if (written < 0) return tracefs_error("write refused", full, saved);
  if (static_cast<size_t>(written) != text.size()) {
    return make_error(ErrorCode::file_error, "short write to " + full);
  }
  return {};
}

}  // namespace

Result<void> Tracefs::write(std::string_view relative, std::string_view text) const {
  return write_with(path(relative), O_WRONLY, text);
}

Result<void> Tracefs::append(std::string_view relative, std::string_view text) const {
  return write_with(path(relative), O_WRONLY | O_APPEND, text);
}

bool Tracefs::exists(std::string_view relative) const { return access(path(relative).c_str(), F_OK) == 0; }

std::vector<std::string> Tracefs::list(std::string_view relative) const {
  std::vector<std::string> names;
  DIR* directory = opendir(path(relative).c_str());
  if (directory == nullptr) return names;
  while (const dirent* entry = readdir(directory)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(directory);
  return names;
}

Result<void> Tracefs::make_directory(std::string_view relative) const {
  const std::string full = path(relative);
  if (mkdir(full.c_str(), 0750) != 0) return tracefs_error("cannot create", full, errno);
  return {};
}

Result<void> Tracefs::remove_directory(std::string_view relative) const {
  const std::string full = path(relative);
  if (rmdir(full.c_str()) != 0) return tracefs_error("cannot remove", full, errno);
  return {};
}

std::string Tracefs::last_error_log_line() const {
  auto log = read("error_log");
  if (!log) return {};
  // Each entry is "[timestamp] source: error: message", then the command
  // and a caret line. The last entry, on one line, without the caret.
  const size_t entry = log->rfind("\n[");
  std::string last = log->substr(entry == std::string::npos ? 0 : entry + 1);
  std::string line;
  bool space = false;
  for (char c : last) {
    if (c == '^') continue;
    if (c == '\n' || c == ' ' || c == '\t') {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
  }
  return line;
}

}  // namespace xref
