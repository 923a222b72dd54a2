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

 private:
  RingDrain(OnRecord on_record, uint64_t records_per_round)
      : on_record_(std::move(on_record)), records_per_round_(records_per_round) {}
  static int take(void* context, void* data, size_t size);

  OnRecord on_record_;
  const uint64_t records_per_round_;
  uint64_t left_ = 0;
  bool bounded_ = true;
  ring_buffer* ring_ = nullptr;
};

}  // namespace xref
