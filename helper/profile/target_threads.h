// The target's threads as a capture follows them: listed from
// /proc/PID/task at start and on a timer, each with its name and its CPU
// time (/proc/PID/task/TID/schedstat, in ns), so the capture can say which
// threads started or exited while it sampled and how much CPU each used.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xref {

struct FollowedThread {
  std::string name;
  uint64_t cpu_ns_at_start = 0;  // 0 for a thread started during the capture
  uint64_t cpu_ns_last = 0;      // at the last look
  bool started_during_capture = false;
  bool exited_during_capture = false;
};

std::vector<uint32_t> list_thread_ids(pid_t pid);

class TargetThreads {
 public:
  explicit TargetThreads(pid_t pid) : pid_(pid) {}
  // Looks at every thread now; `started` marks the threads found after the
  // first look as started during the capture.
  void look(bool started);
  // The threads still sampled: the ones asked for (all when none) and the
  // threads started during the capture (they inherited an event).
  const std::map<uint32_t, FollowedThread>& threads() const { return threads_; }

 private:
  pid_t pid_ = 0;
  std::map<uint32_t, FollowedThread> threads_;
};

}  // namespace xref
