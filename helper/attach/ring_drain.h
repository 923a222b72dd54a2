// A BPF ring buffer drained in bounded rounds: each round hands at most a
// fixed number of records to the consumer and says whether more wait, so
// a command's loop looks at its deadline, signals and the target between
// rounds however fast the target produces (docs/reliability.md). After the
// probes are detached nothing new comes in, and the rest is taken in one go.
// Shared by every command whose BPF program reports through a ring buffer.
#pragma once

#include <bpf/libbpf.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "result.h"

namespace xref {

class RingDrain {
 public:
  static constexpr uint64_t kRecordsPerRound = 8192;
  // Called with each record, in the order the ring buffer hands them over.
  using OnRecord = std::function<void(const void* data, size_t size)>;

  static Result<std::unique_ptr<RingDrain>> open(int ringbuf_fd, OnRecord on_record,
                                                 uint64_t records_per_round = kRecordsPerRound);
  ~RingDrain();
  RingDrain(const RingDrain&) = delete;
  RingDrain& operator=(const RingDrain&) = delete;

  // One round; true when records were left in the ring buffer.
  bool round();
  // Nothing new comes in (the probes are detached): later rounds take all.
  void unbound() { bounded_ = false; }
  // A descriptor to poll that becomes readable when a record submitted with
  // a wakeup came in (BPF_RB_FORCE_WAKEUP), and stays so until clear_wake().
  // Records submitted with BPF_RB_NO_WAKEUP never make it readable: it is an
  // epoll set edge-triggered on the kernel's wakeup, not on data waiting
  // (libbpf's own epoll is level-triggered: a busy target would keep it
  // readable). -1 when it cannot be made.
  int wake_fd();
  void clear_wake();

 private:
  RingDrain(int ringbuf_fd, OnRecord on_record, uint64_t records_per_round)
      : ringbuf_fd_(ringbuf_fd), on_record_(std::move(on_record)), records_per_round_(records_per_round) {}
  static int take(void* context, void* data, size_t size);

  int ringbuf_fd_ = -1;
  int wake_fd_ = -1;
  OnRecord on_record_;
  const uint64_t records_per_round_;
  uint64_t left_ = 0;
  bool bounded_ = true;
  ring_buffer* ring_ = nullptr;
};

}  // namespace xref
