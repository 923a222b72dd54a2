#include "probe/tracefs/engine.h"

#include <optional>
#include <span>
#include <vector>

#include "attach/tracefs/merge.h"
#include "attach/tracefs/path.h"
#include "attach/tracefs/recording.h"
#include "command/option_values.h"
#include "probe/tracefs/events.h"
#include "probe/tracefs/records.h"

namespace xref {
namespace {

class TracefsProbeEngine : public ProbeEngine {
 public:
  TracefsProbeEngine(const ProbePlan& plan, const ProbeTracefsOptions& options, ProbeRecordSink sink)
      : plan_(plan), options_(options), sink_(std::move(sink)), tally_(plan, options.tally) {}

  Result<void> start();

  const std::string& backend() const override { return backend_; }
  Result<void> arm() override { return recording_->start(); }
  Result<bool> drain() override {
    count(false);
    return recording_->more();
  }
  Result<void> settle() override {
    count(true);
    return {};
  }
  bool until_hits_reached() const override { return tally_.stopped(); }
  std::optional<uint64_t> until_hits_reached_at() const override {
    return tally_.stopped() ? std::optional<uint64_t>(tally_.stopped_at()) : std::nullopt;
  }
  void detach() override { recording_->stop(); }
  ProbeCounts counts() const override;
  std::vector<xref_probe_counts> site_counts() const override { return with_loss(tally_.counts().sites); }
  uint64_t samples_not_kept() const override { return tally_.samples_not_kept(); }
  std::vector<std::string> warnings() const override;

 private:
  // Reads what the buffers hold and counts every hit that is complete
  // (merge.h): all of them with `all`, or once recording stopped.
  void count(bool all);
  // Records the kernel lost, and records that may be the target's hits but
  // were not counted: they did not decode, or no source could say whose
  // thread wrote them.
  uint64_t lost() const { return recording_ ? recording_->loss().totals().total() : 0; }
  uint64_t uncounted() const {
    return recording_ ? unparsed_ + recording_->unparsed() + recording_->ambiguous_tid() : 0;
  }
  std::vector<xref_probe_counts> with_loss(std::vector<xref_probe_counts> sites) const;

  const ProbePlan& plan_;
  ProbeTracefsOptions options_;
  ProbeRecordSink sink_;
  const std::string backend_ = "tracefs";
  std::unique_ptr<TracefsRecording> recording_;
  std::optional<SiteRecordDecoder> decoder_;
  HitMerger<SiteHit> merger_;
  ProbeTally tally_;
  uint64_t unparsed_ = 0;  // records of our events that did not decode
};

Result<void> TracefsProbeEngine::start() {
  // The path of each file that has sites, as the kernel may open it.
  std::vector<std::string> paths(plan_.modules.all().size());
  for (const ProbeSite& site : plan_.sites) {
    if (!paths[site.module_index].empty()) continue;
    auto path = tracefs_probe_path(*plan_.modules[site.module_index].module, options_.pid);
    if (!path) return path.error();
    paths[site.module_index] = *path;
  }
  auto recording =
      TracefsRecording::open({options_.pid, options_.helper_pid, options_.ringbuf_bytes}, probe_site_events(plan_, paths));
  if (!recording) return recording.error();
  recording_ = std::move(*recording);
  auto decoder = SiteRecordDecoder::load(*recording_, plan_);
  if (!decoder) return decoder.error();
  decoder_ = std::move(*decoder);
  return {};
}

void TracefsProbeEngine::count(bool all) {
  const uint64_t limit =
      recording_->drain([&](uint64_t timestamp, uint32_t tid, std::span<const uint8_t> record) {
        auto hit = decoder_->decode(record, timestamp, tid);
        if (!hit) {
          ++unparsed_;
          return;
        }
        merger_.add(*hit);
      }, all);
  merger_.release(limit, [&](const SiteHit& hit) { tally_.hit(hit, sink_); });
}

// The kernel counts lost records per CPU, never per event: which site's
// hits they were is unknown. The summary adds up every site's
// records_lost, so all of them are kept at the first site; the document
// shows no address's records_lost with tracefs (probe/output.cpp), only
// the summary's lost_events, and a warning says so.
std::vector<xref_probe_counts> TracefsProbeEngine::with_loss(std::vector<xref_probe_counts> sites) const {
  if (!sites.empty()) sites[0].records_lost = lost() + uncounted();
  return sites;
}

ProbeCounts TracefsProbeEngine::counts() const {
  ProbeCounts counts = tally_.counts();
  counts.sites = with_loss(std::move(counts.sites));
  return counts;
}

std::vector<std::string> TracefsProbeEngine::warnings() const {
  std::vector<std::string> warnings;
  if (!options_.fallback_from.empty()) {
    warnings.push_back("backend_fallback: BPF cannot be used here (" + options_.fallback_from +
                       "): probing with tracefs uprobe events instead");
  }
  warnings.push_back(
      "tracefs_counts: with tracefs, hits are counted by xref from the kernel's trace records, not in BPF: a record "
      "the kernel's ring buffer loses is a hit not counted (summary.lost_events; the result is then incomplete), and "
      "a fetch the kernel cannot read reads as 0");
  if (const uint64_t count = lost(); count != 0) {
    warnings.push_back("tracefs_lost: " + std::to_string(count) +
                       " records were lost in the kernel's ring buffer: hits, threads, callers, groups, histograms "
                       "and samples of any address may each be short by up to that many (the kernel does not say "
                       "whose they were, so no address has a records_lost); a larger "
                       "--ringbuf-bytes (per CPU with tracefs) makes room");
  }
  if (const uint64_t count = uncounted(); count != 0) {
    warnings.push_back("tracefs_uncounted: " + std::to_string(count) +
                       " records were not counted: they did not decode, or no source could say which process their "
                       "thread belonged to; they are in summary.lost_events");
  }
  return warnings;
}

}  // namespace

Result<std::unique_ptr<ProbeEngine>> start_tracefs_probe_engine(const ProbePlan& plan,
                                                                const ProbeTracefsOptions& options,
                                                                ProbeRecordSink sink) {
  if (auto ringbuf = check_ringbuf_bytes(options.ringbuf_bytes); !ringbuf) return ringbuf.error();
  auto engine = std::make_unique<TracefsProbeEngine>(plan, options, std::move(sink));
  if (auto started = engine->start(); !started) return started.error();  // the recording cleans up
  return std::unique_ptr<ProbeEngine>(std::move(engine));
}

}  // namespace xref
