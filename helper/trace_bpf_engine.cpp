#include "trace_bpf_engine.h"

#include <bpf/libbpf.h>

#include <cstring>

namespace xref {
namespace {

int on_record(void* context, void* data, size_t size) {
  if (size < sizeof(xref_trace_event)) return 0;
  xref_trace_event record;
  std::memcpy(&record, data, sizeof record);
  static_cast<EventSink*>(context)->add(record);
  return 0;
}

struct RingBufferDeleter {
  void operator()(ring_buffer* ring) const { ring_buffer__free(ring); }
};

class BpfEngine : public TraceEngine {
 public:
  BpfEngine(std::unique_ptr<TraceBpf> bpf, std::unique_ptr<ring_buffer, RingBufferDeleter> ring)
      : bpf_(std::move(bpf)), ring_(std::move(ring)) {}

  const std::string& backend() const override { return bpf_->backend(); }
  Result<void> drain() override {
    ring_buffer__consume(ring_.get());
    return {};
  }
  TraceCounters counters() const override { return bpf_->counters(); }
  void detach() override { bpf_->detach(); }
  std::map<uint64_t, xref_window_result> window_results() const override { return bpf_->window_results(); }

 private:
  std::unique_ptr<TraceBpf> bpf_;
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring_;
};

}  // namespace

Result<std::unique_ptr<TraceEngine>> start_bpf_engine(const TracePlan& plan, const TraceBpfOptions& options,
                                                      EventSink& sink) {
  auto bpf = TraceBpf::start(plan, options);
  if (!bpf) return bpf.error();
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring(
      ring_buffer__new((*bpf)->ringbuf_fd(), on_record, &sink, nullptr));
  if (!ring) return make_error(ErrorCode::internal, "ring buffer setup failed");
  return std::unique_ptr<TraceEngine>(new BpfEngine(std::move(*bpf), std::move(ring)));
}

}  // namespace xref
