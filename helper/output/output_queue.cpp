#include "output/output_queue.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>

namespace xref {
namespace {

constexpr int kFinishPollMs = 20;  // how often finish() looks at the queue

}  // namespace

OutputQueue::OutputQueue(int fd, size_t budget_bytes)
    : fd_(fd), budget_(budget_bytes), wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  writer_ = std::thread([this] { run(); });
}

OutputQueue::~OutputQueue() {
  abandon();
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool OutputQueue::push(std::string bytes, bool droppable) {
  if (bytes.empty()) return true;
  {
    std::lock_guard lock(mutex_);
    if (totals_.broken || stopping_ || (droppable && queued_bytes_ >= budget_)) {
      ++totals_.pieces_refused;
      return false;
    }
    queued_bytes_ += bytes.size();
    queue_.push_back(std::move(bytes));
  }
  changed_.notify_all();
  return true;
}

bool OutputQueue::broken() const {
  std::lock_guard lock(mutex_);
  return totals_.broken;
}

OutputTotals OutputQueue::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

// Writes what the descriptor takes without blocking the thread for good:
// poll for POLLOUT (or the wake event), then one write of at most PIPE_BUF
// bytes, which a pipe that polls writable accepts at once. Once the queue is
// stopping, nothing is waited for: what the descriptor takes now is still
// written (a second Ctrl-C, or `timeout`, which signals the command and then
// its process group, must not cost a summary the pipe had room for), and the
// rest is given up. False once the reader is gone or nothing more is written.
bool OutputQueue::write_some(std::string& piece, size_t& offset) {
  bool stopping = false;
  {
    std::lock_guard lock(mutex_);
    stopping = stopping_;
  }
  pollfd watched[2] = {{fd_, POLLOUT, 0}, {wake_fd_, POLLIN, 0}};
  const int ready = poll(watched, stopping || wake_fd_ < 0 ? 1 : 2, stopping ? 0 : -1);
  if (ready < 0) return errno == EINTR;
  if (!stopping && (watched[1].revents & POLLIN)) {
    uint64_t ignored = 0;
    (void)!read(wake_fd_, &ignored, sizeof ignored);
    return true;  // looked at again, now without waiting if it is stopping
  }
  if (watched[0].revents & (POLLERR | POLLNVAL)) {
    std::lock_guard lock(mutex_);
    totals_.broken = true;
    return false;
  }
  if (!(watched[0].revents & (POLLOUT | POLLHUP))) return !stopping;
  const size_t chunk = std::min<size_t>(piece.size() - offset, PIPE_BUF);
  const ssize_t count = ::write(fd_, piece.data() + offset, chunk);
  if (count < 0 && (errno == EINTR || errno == EAGAIN)) return errno == EINTR || !stopping;
  if (count <= 0) {
    std::lock_guard lock(mutex_);
    totals_.broken = true;
    return false;
  }
  offset += static_cast<size_t>(count);
  return true;
}

void OutputQueue::run() {
  for (;;) {
    std::string piece;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() || totals_.broken) break;  // stopping, and nothing left to write
      piece = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    size_t offset = 0;
    bool going = true;
    while (offset < piece.size() && going) going = write_some(piece, offset);
    {
      std::lock_guard lock(mutex_);
      queued_bytes_ -= piece.size();
      writing_ = false;
      if (offset == piece.size()) {
        ++totals_.pieces_written;
      } else {
        ++totals_.pieces_unwritten;
        totals_.bytes_unwritten += piece.size() - offset;
      }
    }
    changed_.notify_all();
    if (!going) break;
  }
  std::lock_guard lock(mutex_);
  for (const std::string& piece : queue_) {
    ++totals_.pieces_unwritten;
    totals_.bytes_unwritten += piece.size();
  }
  queue_.clear();
  queued_bytes_ = 0;
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
  return totals();
}

}  // namespace xref
