#include "probe/bpf_engine.h"

#include <algorithm>
#include <cstring>

#include "attach/ring_drain.h"

namespace xref {
namespace {

// `raw.strings` only when the record carried them (with_strings).
ProbeRecord decode(const xref_probe_record& raw, const ProbePlan& plan, bool with_strings) {
  ProbeRecord record;
  record.site = raw.site;
  record.tid = raw.tid;
  record.hit = raw.hit;
  record.timestamp_ns = raw.timestamp_ns;
  record.return_address = raw.return_address;
  record.fetches = fetched_values(plan.fetches, raw.fetch_count, raw.failed, raw.values, raw.errors,
                                  with_strings ? &raw.strings[0][0] : nullptr);
  if (raw.has_regs) record.regs.assign(raw.regs, raw.regs + XREF_PROBE_REG_WORDS);
  return record;
}

std::optional<ProbeStop> decode_stop(const std::optional<xref_probe_stop>& raw, const ProbePlan& plan) {
  if (!raw) return std::nullopt;
  ProbeStop stop;
  stop.site = raw->site;
  stop.tid = raw->tid;
  stop.hit = raw->hit;
  stop.match = raw->match;
  stop.timestamp_ns = raw->timestamp_ns;
  stop.return_address = raw->return_address;
  stop.signal_result = raw->signal_result;
  stop.fetches = fetched_values(plan.fetches, raw->fetch_count, raw->failed, raw->values, raw->errors,
                                &raw->strings[0][0]);
  return stop;
}

class BpfProbeEngine : public ProbeEngine {
 public:
  BpfProbeEngine(const ProbePlan& plan, std::unique_ptr<ProbeBpf> bpf, std::unique_ptr<RingDrain> ring)
      : plan_(plan), bpf_(std::move(bpf)), ring_(std::move(ring)) {}

  const std::string& backend() const override { return bpf_->backend(); }
  Result<void> arm() override {
    bpf_->arm();
    return {};
  }
  Result<bool> drain() override { return ring_->round(); }
  bool until_hits_reached() const override { return bpf_->until_hits_reached(); }
  void detach() override {
    bpf_->detach();
    ring_->unbound();  // nothing new comes in: the rest in one go
  }
  Result<void> release(const std::vector<uint32_t>& sites) override { return bpf_->release(sites); }
  ProbeCounts counts() const override { return bpf_->counts(plan_.sites.size()); }
  std::vector<xref_probe_counts> site_counts() const override { return bpf_->site_counts(plan_.sites.size()); }
  uint64_t samples_not_kept() const override { return bpf_->samples_over_limit(); }
  std::optional<ProbeStop> stop() const override { return decode_stop(bpf_->stop(), plan_); }

 private:
  const ProbePlan& plan_;
  std::unique_ptr<ProbeBpf> bpf_;
  std::unique_ptr<RingDrain> ring_;
};

}  // namespace

Result<std::unique_ptr<ProbeEngine>> start_bpf_probe_engine(const ProbePlan& plan, const ProbeBpfOptions& options,
                                                            ProbeRecordSink sink) {
  auto bpf = ProbeBpf::start(plan, options);
  if (!bpf) return bpf.error();
  auto ring = RingDrain::open((*bpf)->ringbuf_fd(), [&plan, sink = std::move(sink)](const void* data, size_t size) {
    // A record ends before its string slots unless a string was read.
    if (size < XREF_PROBE_RECORD_STRINGS_OFFSET) return;
    xref_probe_record raw;
    std::memcpy(&raw, data, std::min(size, sizeof raw));
    sink(decode(raw, plan, size >= sizeof raw));
  });
  if (!ring) return ring.error();
  return std::unique_ptr<ProbeEngine>(new BpfProbeEngine(plan, std::move(*bpf), std::move(*ring)));
}

}  // namespace xref
