#include "attach/tracefs/path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace xref {
namespace {

bool same_file(const std::string& path, const struct stat& reference) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
  return info.st_dev == reference.st_dev && info.st_ino == reference.st_ino;
}

bool has_space(const std::string& path) { return path.find_first_of(" \t\n") != std::string::npos; }

std::string read_link(const std::string& link) {
  char buffer[4096];
  const ssize_t length = readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (length <= 0) return {};
  return std::string(buffer, static_cast<size_t>(length));
}

}  // namespace

Result<std::string> tracefs_probe_path(const Module& module, pid_t pid) {
  // The reference: the inode behind the /proc link, the file the process maps.
  struct stat reference;
  if (stat(module.open_path.c_str(), &reference) != 0) {
    const int saved = errno;
    return make_error(saved == ESRCH || saved == ENOENT ? ErrorCode::process_exited : ErrorCode::file_error,
                      "cannot stat " + module.open_path + ": " + std::strerror(saved));
  }
  std::vector<std::string> candidates;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string real = module.main_executable ? read_link(proc + "/exe")
                     : module.mappings.empty()  ? module.path
                                                : module.mappings.front().unescaped_path();
  if (!real.empty() && real.front() == '/') {
    candidates.push_back(real);
    candidates.push_back(proc + "/root" + real);
  }
  candidates.push_back(module.open_path);
  for (const std::string& candidate : candidates) {
    if (!has_space(candidate) && same_file(candidate, reference)) return candidate;
  }
  return make_error(ErrorCode::file_error,
                    "no path to " + (real.empty() ? module.open_path : real) +
                        " that tracefs can use leads to the file the process maps",
                    "the executable's path has whitespace or was replaced; use a BPF backend");
}

}  // namespace xref
