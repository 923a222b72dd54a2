#include "output/output_queue.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <climits>
#include <string>

namespace xref {
namespace {

constexpr int kFinishPollMs = 20;  // how often finish() looks at the queue
constexpr int kMaxPieces = 512;     // iovecs per writev (IOV_MAX is 1024)

}  // namespace

OutputQueue::OutputQueue(int fd, size_t budget_bytes)
    : fd_(fd), write_fd_(fd), budget_(budget_bytes), wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  struct stat status {};
  if (fstat(fd, &status) == 0) {
    if (S_ISREG(status.st_mode)) {
      mode_ = Mode::direct;
    } else if (S_ISSOCK(status.st_mode)) {
      mode_ = Mode::socket;
    } else {
      // A pipe or a terminal opened again, non-blocking: its own file
      // description, so the flags of the one the shell shares stay as they are.
      const std::string path = "/proc/self/fd/" + std::to_string(fd);
      const int reopened = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (reopened >= 0) {
        mode_ = Mode::non_blocking;
        write_fd_ = reopened;
      }
    }
  }
  writer_ = std::thread([this] { run(); });
}

OutputQueue::~OutputQueue() {
  abandon();
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool OutputQueue::push(std::string bytes, bool droppable) {
  if (bytes.empty()) return true;
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (totals_.broken || stopping_ || (droppable && queued_bytes_ >= budget_)) {
      ++totals_.pieces_refused;
      return false;
    }
    queued_bytes_ += bytes.size();
    if (!droppable) essential_bytes_ += bytes.size();
    // The writer waits only on an empty queue: one wake per batch, not per piece.
    wake = queue_.empty() && !writing_;
    queue_.push_back({std::move(bytes), droppable});
  }
  if (wake) changed_.notify_all();
  return true;
}

void OutputQueue::set_write_guard(WriteGuard guard) {
  std::lock_guard lock(mutex_);
  guard_ = std::move(guard);
}

bool OutputQueue::unsent(uint64_t key) const {
  std::lock_guard lock(mutex_);
  return unsent_keyed_.count(key) > 0;
}

OutputQueue::KeyedPush OutputQueue::push_keyed(uint64_t key, std::string bytes, bool supersede) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (totals_.broken || stopping_) {
      ++totals_.pieces_refused;
      return KeyedPush::refused;
    }
    const auto found = unsent_keyed_.find(key);
    if (supersede != (found != unsent_keyed_.end())) return KeyedPush::retry;
    queued_bytes_ += bytes.size();
    essential_bytes_ += bytes.size();
    if (supersede) {
      Piece& older = queue_[found->second];
      queued_bytes_ -= older.bytes.size();
      essential_bytes_ -= older.bytes.size();
      older.bytes = std::move(bytes);
      ++totals_.pieces_superseded;
      return KeyedPush::superseded;
    }
    wake = queue_.empty() && !writing_;
    unsent_keyed_[key] = queue_.size();
    queue_.push_back({std::move(bytes), false});
  }
  if (wake) changed_.notify_all();
  return KeyedPush::queued;
}

size_t OutputQueue::essential_bytes() const {
  std::lock_guard lock(mutex_);
  return essential_bytes_;
}

bool OutputQueue::broken() const {
  std::lock_guard lock(mutex_);
  return totals_.broken;
}

OutputTotals OutputQueue::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

bool OutputQueue::wait_writable() {
  bool stopping = false;
  {
    std::lock_guard lock(mutex_);
    stopping = stopping_;
  }
  if (stopping) return false;
  pollfd watched[2] = {{write_fd_, POLLOUT, 0}, {wake_fd_, POLLIN, 0}};
  const int ready = poll(watched, wake_fd_ < 0 ? 1 : 2, -1);
  if (ready < 0) return errno == EINTR;
  if (watched[1].revents & POLLIN) {
    uint64_t ignored = 0;
    (void)!read(wake_fd_, &ignored, sizeof ignored);
    return true;  // looked at again, now without waiting if it is stopping
  }
  if (watched[0].revents & (POLLERR | POLLNVAL)) {
    std::lock_guard lock(mutex_);
    totals_.broken = true;
    return false;
  }
  return true;
}

// One write of up to `count` pieces, the first at most `first_limit` bytes
// when the mode writes small pieces.
ssize_t OutputQueue::write_vector(const iovec* pieces, int count, size_t first_limit) {
  switch (mode_) {
    case Mode::direct:
    case Mode::non_blocking:
      return writev(write_fd_, pieces, count);
    case Mode::socket: {
      msghdr message{};
      message.msg_iov = const_cast<iovec*>(pieces);
      message.msg_iovlen = static_cast<size_t>(count);
      return sendmsg(write_fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    case Mode::small_writes:
      return ::write(write_fd_, pieces[0].iov_base, std::min(pieces[0].iov_len, first_limit));
  }
  return -1;
}

// Once the queue is stopping, nothing is waited for: what the descriptor
// takes now is still written (a second Ctrl-C, or `timeout`, which signals
// the command and then its process group, must not cost a summary the pipe
// had room for), and the rest is given up. In small_writes mode each write
// is preceded by a poll: at most PIPE_BUF bytes, which a pipe that polls
// writable takes at once.
bool OutputQueue::write_batch(std::deque<Piece>& batch, size_t& done, size_t& offset) {
  iovec pieces[kMaxPieces];
  while (done < batch.size()) {
    if (mode_ == Mode::small_writes) {
      bool stopping = false;
      {
        std::lock_guard lock(mutex_);
        stopping = stopping_;
      }
      pollfd watched{write_fd_, POLLOUT, 0};
      const int ready = poll(&watched, 1, 0);
      if (ready < 0 && errno != EINTR) return false;
      if (ready <= 0 || !(watched.revents & (POLLOUT | POLLHUP | POLLERR))) {
        if (stopping || !wait_writable()) return false;
        continue;
      }
    }
    int count = 0;
    for (size_t i = done; i < batch.size() && count < kMaxPieces; ++i, ++count) {
      const size_t skip = i == done ? offset : 0;
      pieces[count].iov_base = batch[i].bytes.data() + skip;
      pieces[count].iov_len = batch[i].bytes.size() - skip;
    }
    const ssize_t written = write_vector(pieces, count, PIPE_BUF);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!wait_writable()) return false;
        continue;
      }
      std::lock_guard lock(mutex_);
      totals_.broken = true;
      return false;
    }
    if (written == 0) {
      std::lock_guard lock(mutex_);
      totals_.broken = true;
      return false;
    }
    size_t left = static_cast<size_t>(written);
    while (left > 0 && done < batch.size()) {
      const size_t rest = batch[done].bytes.size() - offset;
      if (left < rest) {
        offset += left;
        left = 0;
      } else {
        left -= rest;
        ++done;
        offset = 0;
      }
    }
  }
  return true;
}

void OutputQueue::run() {
  std::deque<Piece> batch;
  for (;;) {
    WriteGuard guard;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() || totals_.broken) break;  // stopping, and nothing left to write
      batch.swap(queue_);
      unsent_keyed_.clear();  // being written: no longer replaceable
      writing_ = true;
      guard = guard_;
    }
    size_t done = 0, offset = 0;
    if (guard) guard(true, false);
    const bool going = write_batch(batch, done, offset);
    if (guard) {
      // Where the cursor is: after the last byte written.
      const Piece* last = done > 0 ? &batch[done - 1] : nullptr;
      const bool line_ended = offset == 0 && (last == nullptr || last->bytes.empty() || last->bytes.back() == '\n');
      guard(false, line_ended);
    }
    {
      std::lock_guard lock(mutex_);
      for (size_t i = 0; i < batch.size(); ++i) {
        queued_bytes_ -= batch[i].bytes.size();
        if (!batch[i].droppable) essential_bytes_ -= batch[i].bytes.size();
        if (i < done) continue;
        ++totals_.pieces_unwritten;
        totals_.bytes_unwritten += batch[i].bytes.size() - (i == done ? offset : 0);
      }
      totals_.pieces_written += done;
      writing_ = false;
    }
    batch.clear();
    changed_.notify_all();
    if (!going) break;
  }
  std::lock_guard lock(mutex_);
  for (const Piece& piece : queue_) {
    ++totals_.pieces_unwritten;
    totals_.bytes_unwritten += piece.bytes.size();
  }
  queue_.clear();
  unsent_keyed_.clear();
  queued_bytes_ = 0;
  essential_bytes_ = 0;
  writing_ = false;
  changed_.notify_all();
}

OutputTotals OutputQueue::finish(int cancel_fd, int timeout_ms) {
  if (!writer_.joinable()) return totals();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // Let the writer empty the queue, unless the caller is told to give up.
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if ((queue_.empty() && !writing_) || totals_.broken) break;
    }
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() >= deadline) break;
    pollfd watched{cancel_fd, POLLIN, 0};
    if (poll(&watched, cancel_fd >= 0 ? 1 : 0, kFinishPollMs) > 0 && (watched.revents & POLLIN)) break;
  }
  return stop_writer();
}

OutputTotals OutputQueue::abandon() {
  if (!writer_.joinable()) return totals();
  return stop_writer();
}

OutputTotals OutputQueue::stop_writer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  const uint64_t wake = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &wake, sizeof wake);
  writer_.join();
  // The pipe's or terminal's own descriptor goes with the writer: a reader
  // waiting for the end of the stream sees it when the caller closes fd.
  if (write_fd_ != fd_) close(write_fd_);
  write_fd_ = fd_;
  return totals();
}

}  // namespace xref
