// The perf event descriptors a process holds (/proc/PID/fd ->
// anon_inode:[perf_event]): what a profile capture leaves behind, for the
// tests that prove it leaves nothing.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <string>

namespace xref::test {

inline size_t perf_events_held_by(pid_t pid) {
  size_t count = 0;
  const std::string directory = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return 0;
  while (const dirent* entry = readdir(dir)) {
    char target[256] = {};
    const std::string path = directory + "/" + entry->d_name;
    if (readlink(path.c_str(), target, sizeof target - 1) > 0 && std::string(target) == "anon_inode:[perf_event]") {
      ++count;
    }
  }
  closedir(dir);
  return count;
}

}  // namespace xref::test
