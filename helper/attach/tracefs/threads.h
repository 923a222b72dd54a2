// Which process a recorded thread belongs to. Uprobe events are global: a
// probe in a file fires in every process that maps it, and a record names
// only its thread (common_pid). The tgid filter is done here, in user
// space: a thread is the target's when it is listed in /proc/PID/task, or
// /proc/TID/status says so, or (for a thread that is gone) the kernel's
// saved_tgids table, filled because the instance has record-tgid on.
// Threads no source can place are "ambiguous" and left out too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "attach/tracefs/fs.h"

namespace xref {

enum class ThreadOwner { target, other, unknown };

class ThreadClassifier {
 public:
  ThreadClassifier(Tracefs tracefs, pid_t target) : tracefs_(std::move(tracefs)), target_(target) {}

  // Lists the target's live threads again; call once per drain, before the records.
  void refresh();
  ThreadOwner classify(uint32_t tid);

 private:
  std::optional<pid_t> saved_tgid(uint32_t tid);

  Tracefs tracefs_;
  pid_t target_;
  // A thread's owner does not change while the thread lives; TIDs are not
  // reused fast enough to matter within one trace.
  std::unordered_map<uint32_t, ThreadOwner> known_;
  std::optional<std::unordered_map<uint32_t, pid_t>> saved_tgids_;  // loaded at most once per refresh
  std::unordered_set<uint32_t> unknown_;  // not placed since the last refresh
};

}  // namespace xref
