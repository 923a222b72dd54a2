#include "process/thread_states.h"

#include <dirent.h>

#include <fstream>
#include <string>

namespace xref {
namespace {

// The state letter of /proc/PID/task/TID/stat: after the last ')' of the command.
char thread_state(const std::string& stat_path) {
  std::ifstream file(stat_path);
  std::string line;
  if (!std::getline(file, line)) return '?';
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

}  // namespace

bool every_thread_stopped(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (dir == nullptr) return false;
  size_t threads = 0;
  bool stopped = true;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++threads;
    const char state = thread_state(task + "/" + entry->d_name + "/stat");
    if (state != 't' && state != 'T') stopped = false;
  }
  closedir(dir);
  return threads > 0 && stopped;
}

}  // namespace xref
