#include "trace/bpf_engine.h"

#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attach/ring_drain.h"
#include "monotonic_clock.h"
#include "trace/stopped_threads.h"

namespace xref {
namespace {

class BpfEngine : public TraceEngine {
 public:
  BpfEngine(std::unique_ptr<TraceBpf> bpf, std::unique_ptr<RingDrain> ring, EventSink& sink, pid_t pid)
      : bpf_(std::move(bpf)), ring_(std::move(ring)), sink_(sink), pid_(pid) {}

  const std::string& backend() const override { return bpf_->backend(); }
  Result<bool> drain() override { return ring_->round(); }
  TraceCounters counters() const override { return bpf_->counters(); }
  void detach() override {
    bpf_->detach();
    ring_->unbound();  // nothing new comes in: the rest in one go
  }
  std::map<uint64_t, xref_window_result> window_results() const override { return bpf_->window_results(); }

  void settle_stopped_threads() override {
    for (auto& [tid, window] : bpf_->thread_windows()) {
      const auto sp = stopped_thread_sp(pid_, tid);
      if (!sp) continue;
      const SettledFrames settled = settle_frames(window, tid, *sp, monotonic_ns());
      if (settled.records.empty()) continue;
      if (settled.closed) {
        bpf_->end_thread_window(tid);
      } else {
        bpf_->put_thread_window(tid, window);
      }
      for (const xref_trace_event& record : settled.records) sink_.add(record);
    }
  }

  Result<uint64_t> open_here(const HereWindow& here) override {
    const uint64_t start_ns = monotonic_ns();
    auto window_id = bpf_->open_window(here.tid, here.entry_sp, here.function_id, start_ns);
    if (!window_id) return window_id.error();
    // The window's first event, as the start probe would have sent it.
    xref_trace_event record;
    std::memset(&record, 0, sizeof record);
    record.window_id = *window_id;
    record.seq = 0;
    record.timestamp_ns = start_ns;
    record.sp = here.entry_sp;
    record.tid = here.tid;
    record.probe_index = 0xffffffff;
    record.function_id = here.function_id;
    record.type = XREF_EVENT_ENTRY;
    record.flags = XREF_EVENT_F_WINDOW_BEGIN;
    uint64_t return_address = 0;
    iovec local{&return_address, sizeof return_address};
    iovec remote{reinterpret_cast<void*>(here.entry_sp), sizeof return_address};
    if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) == sizeof return_address) {
      record.return_address = return_address;
    }
    sink_.add(record);
    return window_id;
  }

 private:
  std::unique_ptr<TraceBpf> bpf_;
  std::unique_ptr<RingDrain> ring_;
  EventSink& sink_;
  pid_t pid_;
};

}  // namespace

Result<std::unique_ptr<TraceEngine>> start_bpf_engine(const TracePlan& plan, const TraceBpfOptions& options,
                                                      EventSink& sink) {
  auto bpf = TraceBpf::start(plan, options);
  if (!bpf) return bpf.error();
  // A record is its header only when it carries no fetched values.
  auto ring = RingDrain::open((*bpf)->ringbuf_fd(), [&sink](const void* data, size_t size) {
    xref_trace_event record;
    if (size < XREF_TRACE_EVENT_HEADER_BYTES) {
      std::memset(&record, 0, sizeof record);  // not a record of ours: counted as unparsed
      sink.add(record);
      return;
    }
    // Only the part the record carries (header, values, strings).
    std::memcpy(&record, data, std::min(size, sizeof record));
    // A record without strings: its string slots are not left as garbage.
    if (size < sizeof record) std::memset(record.strings, 0, sizeof record.strings);
    if (size < XREF_TRACE_EVENT_STRINGS_OFFSET) record.fetch_count = 0;
    sink.add(record);
  });
  if (!ring) return ring.error();
  (*bpf)->arm();
  return std::unique_ptr<TraceEngine>(
      new BpfEngine(std::move(*bpf), std::move(*ring), sink, options.pid));
}

}  // namespace xref
