#include "trace/stopped_threads.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace xref {

std::optional<uint64_t> stopped_thread_sp(pid_t pid, uint32_t tid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
  std::ifstream stat(task + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // The state follows the command name, which is in parentheses and may
  // itself hold spaces and parentheses.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 't') return std::nullopt;
  // "-1 SP PC" outside a system call, "NR ARG1..ARG6 SP PC" inside one,
  // "running" otherwise: the stack pointer is the second last word.
  std::ifstream syscall(task + "/syscall");
  std::vector<std::string> words;
  for (std::string word; syscall >> word;) words.push_back(word);
  if (words.size() < 3) return std::nullopt;
  try {
    return std::stoull(words[words.size() - 2], nullptr, 16);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

xref_trace_event record_of(const xref_thread_window& window, uint32_t tid, uint8_t type, uint64_t now_ns) {
  xref_trace_event record;
  std::memset(&record, 0, sizeof record);
  record.window_id = window.window_id;
  record.timestamp_ns = now_ns;
  record.tid = tid;
  record.probe_index = 0xffffffff;
  record.type = type;
  return record;
}

}  // namespace

SettledFrames settle_frames(xref_thread_window& window, uint32_t tid, uint64_t sp, uint64_t now_ns) {
  SettledFrames settled;
  while (window.depth > 0 && window.depth <= XREF_TRACE_MAX_DEPTH) {
    const xref_frame top = window.frames[window.depth - 1];
    if (top.entry_sp >= sp) break;
    window.depth -= 1;
    const bool tailed = (top.flags & XREF_FRAME_F_TAILED) != 0;
    // Returned where no probe saw it (pop_step's rule): a frame handed on
    // by a tail jump, or whose function may leave by a jump no probe sees.
    const bool unseen = (top.flags & XREF_FRAME_F_ENDS_UNSEEN) != 0;
    if (unseen && (!tailed || (top.flags & XREF_FRAME_F_NAMED))) {
      xref_trace_event ended = record_of(window, tid, XREF_EVENT_RETURN, now_ns);
      ended.seq = window.seq++;
      ended.depth = static_cast<uint16_t>(window.depth);
      ended.function_id = top.function_id;
      ended.sp = top.entry_sp;
      ended.flags = XREF_EVENT_F_INFERRED;
      settled.records.push_back(ended);
    }
    if (!unseen) {
      xref_trace_event unwound = record_of(window, tid, XREF_EVENT_UNWOUND, now_ns);
      unwound.seq = window.seq++;
      unwound.depth = static_cast<uint16_t>(window.depth);
      unwound.function_id = top.function_id;
      unwound.sp = top.entry_sp;
      settled.records.push_back(unwound);
    }
    if (window.depth == 0) {
      xref_trace_event end = record_of(window, tid, XREF_EVENT_WINDOW_END, now_ns);
      end.seq = window.seq++;
      end.status = unseen ? XREF_WINDOW_COMPLETE : XREF_WINDOW_UNWOUND;
      end.lost = window.lost;
      end.function_id = tailed ? top.function_id : XREF_FUNCTION_NONE;
      end.flags = unseen ? XREF_EVENT_F_INFERRED : 0;
      settled.records.push_back(end);
      settled.closed = true;
      break;
    }
  }
  return settled;
}

}  // namespace xref
