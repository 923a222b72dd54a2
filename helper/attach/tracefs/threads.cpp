#include "attach/tracefs/threads.h"

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>

namespace xref {

void ThreadClassifier::refresh() {
  saved_tgids_.reset();
  unknown_.clear();
  const std::string task = "/proc/" + std::to_string(target_) + "/task";
  DIR* directory = opendir(task.c_str());
  if (directory == nullptr) return;
  while (const dirent* entry = readdir(directory)) {
    const char* name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    known_[static_cast<uint32_t>(std::strtoul(name, nullptr, 10))] = ThreadOwner::target;
  }
  closedir(directory);
}

std::optional<pid_t> ThreadClassifier::saved_tgid(uint32_t tid) {
  if (!saved_tgids_) {
    saved_tgids_.emplace();
    if (auto text = tracefs_.read("saved_tgids")) {
      std::istringstream lines(*text);
      long pid = 0, tgid = 0;
      while (lines >> pid >> tgid) (*saved_tgids_)[static_cast<uint32_t>(pid)] = static_cast<pid_t>(tgid);
    }
  }
  auto found = saved_tgids_->find(tid);
  if (found == saved_tgids_->end() || found->second <= 0) return std::nullopt;
  return found->second;
}

ThreadOwner ThreadClassifier::classify(uint32_t tid) {
  if (auto found = known_.find(tid); found != known_.end()) return found->second;
  if (unknown_.count(tid)) return ThreadOwner::unknown;
  ThreadOwner owner = ThreadOwner::unknown;
  if (static_cast<pid_t>(tid) == target_) {
    owner = ThreadOwner::target;
  } else {
    std::ifstream status("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (status && std::getline(status, line)) {
      if (line.rfind("Tgid:", 0) == 0) {
        owner = std::stol(line.substr(5)) == target_ ? ThreadOwner::target : ThreadOwner::other;
        break;
      }
    }
    if (owner == ThreadOwner::unknown) {
      if (auto tgid = saved_tgid(tid)) owner = *tgid == target_ ? ThreadOwner::target : ThreadOwner::other;
    }
  }
  // Unknown is asked again after the next refresh: the thread may show up
  // in saved_tgids by then.
  if (owner == ThreadOwner::unknown) {
    unknown_.insert(tid);
  } else {
    known_[tid] = owner;
  }
  return owner;
}

}  // namespace xref
