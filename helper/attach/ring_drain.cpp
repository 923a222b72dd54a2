#include "attach/ring_drain.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

namespace xref {
namespace {

// What the record callback returns to make libbpf stop after the record it
// just handed over; ring_buffer__consume then returns it.
constexpr int kRoundFull = -EAGAIN;

}  // namespace

Result<std::unique_ptr<RingDrain>> RingDrain::open(int ringbuf_fd, OnRecord on_record, uint64_t records_per_round) {
  std::unique_ptr<RingDrain> drain(new RingDrain(ringbuf_fd, std::move(on_record), records_per_round));
  drain->ring_ = ring_buffer__new(ringbuf_fd, &RingDrain::take, drain.get(), nullptr);
  if (drain->ring_ == nullptr) return make_error(ErrorCode::internal, "ring buffer setup failed");
  return drain;
}

RingDrain::~RingDrain() {
  ring_buffer__free(ring_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

int RingDrain::wake_fd() {
  if (wake_fd_ >= 0) return wake_fd_;
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return -1;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLET;
  if (epoll_ctl(fd, EPOLL_CTL_ADD, ringbuf_fd_, &event) != 0) {
    close(fd);
    return -1;
  }
  wake_fd_ = fd;
  return wake_fd_;
}

void RingDrain::clear_wake() {
  if (wake_fd_ < 0) return;
  epoll_event event{};
  // Edge-triggered: taking the event leaves the set unready until the
  // kernel's next wakeup.
  while (epoll_wait(wake_fd_, &event, 1, 0) > 0) {
  }
}

int RingDrain::take(void* context, void* data, size_t size) {
  auto* drain = static_cast<RingDrain*>(context);
  drain->on_record_(data, size);
  if (drain->bounded_ && --drain->left_ == 0) return kRoundFull;
  return 0;
}

bool RingDrain::round() {
  left_ = records_per_round_;
  return ring_buffer__consume(ring_) == kRoundFull;
}

}  // namespace xref
