// Output that never holds up the engine: bytes for one descriptor (stdout,
// the protocol pipe) go into a bounded queue, and a writer thread of its own
// puts them out as fast as the reader takes them. A slow or stalled reader
// costs output, never the deadline or the detach: when the queue is full, a
// droppable piece (a window) is refused and its producer counts it as lost;
// essential pieces (headers, summaries, protocol answers) always go in.
// Shared by every command's live output (trace, and probe, watch and profile
// after it).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace xref {

struct OutputTotals {
  uint64_t pieces_written = 0;
  uint64_t pieces_refused = 0;    // droppable pieces refused while the queue was full
  uint64_t pieces_unwritten = 0;  // still queued when the output was abandoned or broke
  uint64_t bytes_unwritten = 0;
  bool broken = false;            // the reader went away (EPIPE and the like)
};

class OutputQueue {
 public:
  static constexpr size_t kDefaultBudgetBytes = 64u << 20;

  // `fd` stays the caller's; nothing is written to it after finish().
  explicit OutputQueue(int fd, size_t budget_bytes = kDefaultBudgetBytes);
  ~OutputQueue();
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  // Queues `bytes`. A droppable piece is refused (false) when the queue
  // already holds the budget, or once the reader is gone; an essential one
  // is refused only once the reader is gone.
  bool push(std::string bytes, bool droppable);
  bool broken() const;

  // Waits until everything queued is written, the reader goes away,
  // `cancel_fd` (e.g. a signalfd; -1: none) becomes readable, or
  // `timeout_ms` (-1: none) passes; then stops the writer, which still
  // writes what the descriptor takes without waiting. What was not written
  // is counted, never waited for again.
  OutputTotals finish(int cancel_fd = -1, int timeout_ms = -1);
  // Stops the writer now: what the descriptor takes without waiting is
  // written, the rest is counted as unwritten.
  OutputTotals abandon();
  OutputTotals totals() const;

 private:
  void run();
  OutputTotals stop_writer();
  bool write_some(std::string& piece, size_t& offset);

  const int fd_;
  const size_t budget_;
  int wake_fd_ = -1;  // an eventfd that ends the writer's wait for POLLOUT
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;  // the writer holds a piece taken from the queue
  bool stopping_ = false;
  OutputTotals totals_;
  std::thread writer_;
};

}  // namespace xref
