#include "profile/target_threads.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <set>

namespace xref {
namespace {

std::string task_path(pid_t pid, uint32_t tid) {
  return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
}

}  // namespace

std::vector<uint32_t> list_thread_ids(pid_t pid) {
  std::vector<uint32_t> tids;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    tids.push_back(static_cast<uint32_t>(std::strtoul(entry->d_name, nullptr, 10)));
  }
  closedir(dir);
  return tids;
}

void TargetThreads::look(bool started) {
  std::set<uint32_t> alive;
  for (uint32_t tid : list_thread_ids(pid_)) {
    const std::string path = task_path(pid_, tid);
    std::ifstream schedstat(path + "/schedstat");
    uint64_t cpu_ns = 0;
    if (!(schedstat >> cpu_ns)) continue;  // gone meanwhile
    std::ifstream comm(path + "/comm");
    std::string name;
    std::getline(comm, name);
    alive.insert(tid);
    auto [entry, inserted] = threads_.try_emplace(tid);
    FollowedThread& thread = entry->second;
    if (inserted) {
      thread.started_during_capture = started;
      thread.cpu_ns_at_start = started ? 0 : cpu_ns;
    }
    if (!name.empty()) thread.name = name;
    thread.cpu_ns_last = cpu_ns;
  }
  for (auto& [tid, thread] : threads_) {
    if (!alive.count(tid)) thread.exited_during_capture = true;
  }
}

}  // namespace xref
