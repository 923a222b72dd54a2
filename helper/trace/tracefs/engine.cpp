#include "trace/tracefs/engine.h"

#include <memory>
#include <optional>
#include <span>

#include "attach/tracefs/merge.h"
#include "attach/tracefs/path.h"
#include "attach/tracefs/recording.h"
#include "command/option_values.h"
#include "trace/tracefs/probes.h"
#include "trace/tracefs/records.h"
#include "trace/window_machine.h"

namespace xref {
namespace {

class TracefsEngine : public TraceEngine {
 public:
  TracefsEngine(const TracePlan& plan, const TracefsEngineOptions& options, EventSink& sink)
      : plan_(plan),
        options_(options),
        sink_(sink),
        machine_(plan, WindowMachineOptions{options.max_events, options.max_windows}) {}
  TracefsEngine(const TracefsEngine&) = delete;
  TracefsEngine& operator=(const TracefsEngine&) = delete;

  Result<void> start();

  const std::string& backend() const override { return backend_; }
  Result<bool> drain() override;
  TraceCounters counters() const override;
  void detach() override {
    if (recording_) recording_->stop();
  }
  std::map<uint64_t, xref_window_result> window_results() const override { return machine_.window_results(); }
  std::vector<std::pair<std::string, nlohmann::json>> details() const override;

 private:
  void deliver(const xref_trace_event& record);

  const TracePlan& plan_;
  TracefsEngineOptions options_;
  EventSink& sink_;
  const std::string backend_ = "tracefs";
  std::vector<std::string> paths_;  // per plan module
  std::unique_ptr<TracefsRecording> recording_;
  std::optional<TracefsRecordDecoder> decoder_;
  WindowMachine machine_;
  HitMerger<ProbeHit> merger_;
  std::map<uint64_t, uint64_t> open_windows_;  // window id -> its first timestamp
  uint64_t unparsed_ = 0;                      // records of our events that did not decode
};

Result<void> TracefsEngine::start() {
  for (const PlanModule& module : plan_.modules) {
    auto path = tracefs_probe_path(*module.module, options_.pid);
    if (!path) return path.error();
    paths_.push_back(*path);
  }
  auto events = tracefs_probe_events(plan_, paths_);
  if (!events) return events.error();
  auto recording = TracefsRecording::open({options_.pid, options_.helper_pid, options_.ringbuf_bytes}, *events);
  if (!recording) return recording.error();
  recording_ = std::move(*recording);
  auto decoder = TracefsRecordDecoder::load(recording_->tracefs(), recording_->group(), plan_);
  if (!decoder) return decoder.error();
  decoder_ = std::move(*decoder);
  return recording_->start();
}

Result<bool> TracefsEngine::drain() {
  if (!recording_) return false;
  const uint64_t limit = recording_->drain([&](uint64_t timestamp, uint32_t, std::span<const uint8_t> record) {
    auto hit = decoder_->decode(record, timestamp);
    if (!hit) {
      ++unparsed_;
      return;
    }
    merger_.add(*hit);
  });
  merger_.release(limit, [&](const ProbeHit& hit) {
    machine_.hit(hit, [&](const xref_trace_event& record) { deliver(record); });
  });
  if (recording_->stopped()) {
    // The windows still open at the end: marked when loss happened since they opened.
    for (const auto& [window_id, first_ns] : open_windows_) {
      if (recording_->loss().during(first_ns, HitMerger<ProbeHit>::everything)) {
        sink_.windows().mark_possible_loss(window_id);
      }
    }
  }
  return recording_->more();
}

void TracefsEngine::deliver(const xref_trace_event& record) {
  if (record.type == XREF_EVENT_ENTRY && (record.flags & XREF_EVENT_F_WINDOW_BEGIN)) {
    open_windows_[record.window_id] = record.timestamp_ns;
  }
  if (record.type == XREF_EVENT_WINDOW_END) {
    auto open = open_windows_.find(record.window_id);
    const uint64_t first_ns = open == open_windows_.end() ? 0 : open->second;
    if (open != open_windows_.end()) open_windows_.erase(open);
    // Before the window goes out: the loss checked last covers its end.
    if (recording_->loss().during(first_ns, record.timestamp_ns)) sink_.windows().mark_possible_loss(record.window_id);
  }
  sink_.add(record);
}

TraceCounters TracefsEngine::counters() const {
  TraceCounters counters = machine_.counters();
  if (!recording_) return counters;
  const RingLoss& loss = recording_->loss().totals();
  counters.overrun = loss.overrun;
  counters.commit_overrun = loss.commit_overrun;
  counters.dropped_events = loss.dropped_events;
  counters.lost_events = loss.total();
  counters.excluded_other_tgid_events = recording_->excluded_other_tgid();
  counters.ambiguous_tid_events = recording_->ambiguous_tid();
  counters.unparsed_records = recording_->unparsed() + unparsed_;
  return counters;
}

std::vector<std::pair<std::string, nlohmann::json>> TracefsEngine::details() const {
  if (!recording_) return {};
  const ReapReport& reaped = recording_->reaped();
  std::vector<std::pair<std::string, nlohmann::json>> facts = {
      {"instance", recording_->instance_name()},
      {"event_group", recording_->group()},
      {"probe_path", paths_.empty() ? std::string() : paths_.front()},
      {"reader", "per_cpu_trace_pipe_raw"},
      {"clock", "mono"},
      {"tgid_filter", "user_space"},
      {"reaped_instances", reaped.instances.size()},
      {"reaped_groups", reaped.groups.size()},
  };
  for (size_t i = 1; i < paths_.size(); ++i) facts.emplace_back("probe_path_" + std::to_string(i), paths_[i]);
  if (!reaped.failures.empty()) facts.emplace_back("reap_failure", reaped.failures.front());
  return facts;
}

}  // namespace

Result<std::unique_ptr<TraceEngine>> start_tracefs_engine(const TracePlan& plan, const TracefsEngineOptions& options,
                                                          EventSink& sink) {
  if (auto ringbuf = check_ringbuf_bytes(options.ringbuf_bytes); !ringbuf) return ringbuf.error();
  auto engine = std::make_unique<TracefsEngine>(plan, options, sink);
  if (auto started = engine->start(); !started) return started.error();  // the recording cleans up
  return std::unique_ptr<TraceEngine>(std::move(engine));
}

}  // namespace xref
