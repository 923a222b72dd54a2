// Output that never holds up the engine: bytes for one descriptor (stdout,
// the protocol pipe) go into a bounded queue, and a writer thread of its own
// puts them out as fast as the reader takes them. A slow or stalled reader
// costs output, never the deadline or the detach: when the queue is full, a
// droppable piece (a window) is refused and its producer counts it as lost;
// essential pieces (headers, summaries, protocol answers) always go in.
// Shared by every command's live output (trace, and probe, watch and profile
// after it).
//
// The writer takes everything queued at once and hands it to the kernel
// in few large writev calls: to a regular file directly; to a pipe, a
// terminal or a socket without ever blocking (a descriptor of its own
// opened non-blocking on the same pipe or terminal, MSG_DONTWAIT on a
// socket), waiting in poll only when the reader is full.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

struct iovec;

namespace xref {

struct OutputTotals {
  uint64_t pieces_written = 0;
  uint64_t pieces_refused = 0;    // droppable pieces refused while the queue was full
  uint64_t pieces_unwritten = 0;  // still queued when the output was abandoned or broke
  uint64_t pieces_superseded = 0;  // keyed pieces replaced, unsent, by a newer one of the same key
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

  // Called by the writer before it writes a batch (`writing`) and after
  // (with whether the bytes ended a line): a status line on the same
  // terminal steps aside meanwhile (output/status_line.h). Set before the
  // first push.
  using WriteGuard = std::function<void(bool writing, bool at_line_start)>;
  void set_write_guard(WriteGuard guard);

  // Keyed pieces: a newer document that makes an older one of the same key
  // (e.g. one session's state at a drain) worthless. `key` is not 0, and
  // one producer pushes each key.
  // Whether the last piece pushed under `key` is still queued, unsent.
  bool unsent(uint64_t key) const;
  enum class KeyedPush {
    queued,      // at the end of the queue: nothing of `key` was unsent
    superseded,  // in the unsent piece's place, which it replaced
    retry,       // `supersede` no longer matches: the writer took the piece meanwhile
    refused,     // the reader is gone
  };
  // Queues an essential piece under `key`. With `supersede` (what unsent()
  // said, so the producer could build `bytes` for it), it replaces the unsent
  // piece of `key` where that piece stands.
  KeyedPush push_keyed(uint64_t key, std::string bytes, bool supersede);
  // Bytes of essential pieces queued and not yet written: what a producer
  // that must not lose anything may wait on before it makes more.
  size_t essential_bytes() const;

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
  // How the writer reaches the descriptor.
  enum class Mode {
    direct,        // a regular file: writes never wait for a reader
    non_blocking,  // write_fd_: the same pipe or terminal, opened O_NONBLOCK
    socket,        // sendmsg with MSG_DONTWAIT
    small_writes,  // anything else: poll, then at most PIPE_BUF bytes per write
  };

  void run();
  OutputTotals stop_writer();
  // Writes the pieces of `batch` from piece `done` at `offset` on; false
  // once the reader is gone or, stopping, nothing more is written without waiting.
  struct Piece {
    std::string bytes;
    bool droppable = false;
  };
  bool write_batch(std::deque<Piece>& batch, size_t& done, size_t& offset);
  // Waits until the descriptor takes more (or the wake event); false when
  // it is broken or, stopping, will not wait.
  bool wait_writable();
  ssize_t write_vector(const struct iovec* pieces, int count, size_t first_limit);

  const int fd_;
  Mode mode_ = Mode::small_writes;
  int write_fd_ = -1;  // what is written to: fd_, or its non-blocking reopening
  const size_t budget_;
  int wake_fd_ = -1;  // an eventfd that ends the writer's wait for POLLOUT
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> queue_;
  size_t queued_bytes_ = 0;
  size_t essential_bytes_ = 0;
  std::map<uint64_t, size_t> unsent_keyed_;  // key -> its piece's index in queue_
  WriteGuard guard_;
  bool writing_ = false;  // the writer holds pieces taken from the queue
  bool stopping_ = false;
  OutputTotals totals_;
  std::thread writer_;
};

}  // namespace xref
