#include "watch/hw_threads.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace xref {
namespace {

// Field 22 (starttime) of a stat line: counted after the command's last ')'
// (the command may hold spaces and parentheses), where field 3 begins.
uint64_t start_ticks(const std::string& stat_path) {
  std::ifstream file(stat_path);
  std::string line;
  if (!std::getline(file, line)) return 0;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int number = 3; number <= 22; ++number) {
    if (!(fields >> field)) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

}  // namespace

uint64_t boottime_ns() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

std::vector<TargetThread> list_target_threads(pid_t pid) {
  std::vector<TargetThread> threads;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (dir == nullptr) return threads;
  const uint64_t ticks_per_second = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    TargetThread thread;
    thread.tid = static_cast<uint32_t>(std::strtoul(entry->d_name, nullptr, 10));
    const uint64_t ticks = start_ticks(task + "/" + entry->d_name + "/stat");
    thread.start_ns = ticks_per_second == 0 ? 0 : ticks * (1000000000ull / ticks_per_second);
    threads.push_back(thread);
  }
  closedir(dir);
  return threads;
}

}  // namespace xref
