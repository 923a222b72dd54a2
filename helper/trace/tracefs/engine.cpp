#include "trace/tracefs/engine.h"

#include <time.h>

#include <algorithm>
#include <optional>

#include "attach/tracefs/fs.h"
#include "attach/tracefs/groups.h"
#include "attach/tracefs/instance.h"
#include "attach/tracefs/loss.h"
#include "attach/tracefs/path.h"
#include "attach/tracefs/reaper.h"
#include "attach/tracefs/ring.h"
#include "attach/tracefs/threads.h"
#include "attach/tracefs/watchdog.h"
#include "command/option_values.h"
#include "monotonic_clock.h"
#include "trace/tracefs/merge.h"
#include "trace/tracefs/probes.h"
#include "trace/tracefs/records.h"
#include "trace/window_machine.h"

namespace xref {
namespace {

constexpr size_t kPagesPerRound = 64;  // per CPU, while the probes are in

Error with_prefix(Error error, const std::string& prefix) {
  error.message = prefix + error.message;
  return error;
}

class TracefsEngine : public TraceEngine {
 public:
  TracefsEngine(Tracefs tracefs, const TracePlan& plan, const TracefsEngineOptions& options, EventSink& sink)
      : tracefs_(tracefs),
        plan_(plan),
        options_(options),
        sink_(sink),
        owner_(tracefs_owner_of_process(options.helper_pid)),
        group_(tracefs_group_name(owner_)),
        instance_name_(tracefs_instance_name(owner_)),
        threads_(tracefs, options.pid),
        machine_(plan, WindowMachineOptions{options.max_events, options.max_windows}),
        loss_(0) {}
  ~TracefsEngine() override { cleanup(); }
  TracefsEngine(const TracefsEngine&) = delete;
  TracefsEngine& operator=(const TracefsEngine&) = delete;

  Result<void> start();

  const std::string& backend() const override { return backend_; }
  Result<bool> drain() override;
  TraceCounters counters() const override;
  void detach() override;
  std::map<uint64_t, xref_window_result> window_results() const override { return machine_.window_results(); }
  std::vector<std::pair<std::string, nlohmann::json>> details() const override;

 private:
  // Reads what the buffers hold; returns the timestamp below which every
  // record has been read (everything, unless a CPU was cut short).
  uint64_t read_records();
  void deliver(const xref_trace_event& record);
  Result<void> start_watchdog();
  void cleanup();

  Tracefs tracefs_;
  const TracePlan& plan_;
  TracefsEngineOptions options_;
  EventSink& sink_;
  const std::string backend_ = "tracefs";
  TracefsOwner owner_;
  std::string group_;
  std::string instance_name_;
  std::vector<std::string> paths_;  // per plan module
  ReapReport reaped_;
  std::optional<TracefsWatchdog> watchdog_;
  bool group_defined_ = false;
  std::optional<TracefsInstance> instance_;
  RingPageLayout page_layout_;
  RingReaders readers_;
  std::optional<TracefsRecordDecoder> decoder_;
  ThreadClassifier threads_;
  WindowMachine machine_;
  HitMerger merger_;
  LossTimeline loss_;
  uint64_t previous_round_ns_ = 0;
  bool detached_ = false;
  bool round_capped_ = false;  // the last round left pages unread
  std::map<uint64_t, uint64_t> open_windows_;  // window id -> its first timestamp
  uint64_t excluded_other_tgid_ = 0;
  uint64_t ambiguous_tid_ = 0;
  uint64_t unparsed_ = 0;
};

Result<void> TracefsEngine::start() {
  reaped_ = reap_tracefs_leftovers(tracefs_, owner_);
  for (const PlanModule& module : plan_.modules) {
    auto path = tracefs_probe_path(*module.module, options_.pid);
    if (!path) return path.error();
    paths_.push_back(*path);
  }
  if (auto watched = start_watchdog(); !watched) return watched;

  group_defined_ = true;  // from here on, cleanup removes whatever part got defined
  if (auto defined = define_tracefs_probes(tracefs_, plan_, group_, paths_); !defined) return defined.error();
  auto instance = TracefsInstance::create(tracefs_, instance_name_, options_.ringbuf_bytes / 1024);
  if (!instance) return with_prefix(instance.error(), "setting up the ftrace instance: ");
  instance_ = std::move(*instance);

  auto header = tracefs_.read("events/header_page");
  if (!header) return header.error();
  auto header_format = parse_event_format(*header);
  if (!header_format) return header_format.error();
  auto layout = ring_page_layout(*header_format);
  if (!layout) return layout.error();
  page_layout_ = *layout;
  auto decoder = TracefsRecordDecoder::load(tracefs_, group_, plan_);
  if (!decoder) return decoder.error();
  decoder_ = std::move(*decoder);
  auto readers = RingReaders::open(instance_->directory(), instance_->page_size());
  if (!readers) return readers.error();
  readers_ = std::move(*readers);

  // Every probe is armed with the instance's recording off, then recording
  // starts for all of them at once.
  if (auto enabled = instance_->enable_group(group_, true); !enabled) {
    Error error = with_prefix(enabled.error(), "enabling the uprobe events: ");
    if (const std::string kernel = tracefs_.last_error_log_line(); !kernel.empty()) {
      error.message += " (kernel: " + kernel + ")";
    }
    return error;
  }
  previous_round_ns_ = monotonic_ns();
  loss_ = LossTimeline(previous_round_ns_);
  if (auto on = instance_->set_tracing(true); !on) return on.error();
  return {};
}

// Before anything is defined: from the first event on, a crash of this
// process leaves nothing behind.
Result<void> TracefsEngine::start_watchdog() {
  TracefsWatchdogPlan plan{tracefs_.path("instances/" + instance_name_), tracefs_.path("uprobe_events"), {}};
  for (size_t index = 0; index < plan_.probes.size(); ++index) {
    if (plan_.probes[index].head) plan.event_removals.push_back("-:" + group_ + "/" + tracefs_event_name(index) + "\n");
  }
  auto watchdog = TracefsWatchdog::start(std::move(plan));
  if (!watchdog) return watchdog.error();
  watchdog_.emplace(std::move(*watchdog));
  return {};
}

uint64_t TracefsEngine::read_records() {
  threads_.refresh();
  std::map<int, uint64_t> last_read;  // per CPU, the newest stamp read
  // While probes are in, a round reads a bounded number of pages per CPU,
  // so the caller's deadline and signals come round however busy the
  // target is; after the detach, all of them.
  const size_t all_pages = 2 * options_.ringbuf_bytes / instance_->page_size() + 16;
  const size_t max_pages = detached_ ? all_pages : std::min(all_pages, kPagesPerRound);
  auto read = readers_.read_available(max_pages, [&](int cpu, std::span<const uint8_t> page) {
    const RingPageSummary summary = parse_ring_page(page, page_layout_, [&](uint64_t timestamp,
                                                                             std::span<const uint8_t> record) {
      last_read[cpu] = timestamp;
      auto hit = decoder_->decode(record, timestamp);
      if (!hit) {
        ++unparsed_;
        return;
      }
      switch (threads_.classify(hit->tid)) {
        case ThreadOwner::target: merger_.add(*hit); break;
        case ThreadOwner::other: ++excluded_other_tgid_; break;
        case ThreadOwner::unknown: ++ambiguous_tid_; break;
      }
    });
    if (summary.malformed) ++unparsed_;
  });
  if (!read) return 0;  // a CPU not read at all: release nothing this round
  round_capped_ = *read > 0;
  if (*read == 0) return HitMerger::everything;
  // A CPU cut short still holds records: nothing stamped after what was
  // read of it may be released yet. Which CPU it was is not known, so the
  // oldest of the newest stamps read bounds all.
  uint64_t complete_below = 0;
  for (const auto& [cpu, newest] : last_read) {
    complete_below = complete_below == 0 ? newest : std::min(complete_below, newest);
  }
  return complete_below;
}

Result<bool> TracefsEngine::drain() {
  if (!instance_) return false;
  const uint64_t round_ns = monotonic_ns();
  uint64_t complete_below = read_records();
  // After the detach nothing is written any more: read until the buffers
  // are empty (bounded, should reads keep failing).
  for (int round = 0; detached_ && complete_below != HitMerger::everything && round < 64; ++round) {
    complete_below = read_records();
  }
  if (auto totals = instance_->loss()) loss_.update(*totals, monotonic_ns());
  const uint64_t limit = detached_ ? HitMerger::everything : std::min(previous_round_ns_, complete_below);
  merger_.release(limit, [&](const ProbeHit& hit) {
    machine_.hit(hit, [&](const xref_trace_event& record) { deliver(record); });
  });
  previous_round_ns_ = round_ns;
  if (detached_) {
    // The windows still open at the end: marked when loss happened since they opened.
    for (const auto& [window_id, first_ns] : open_windows_) {
      if (loss_.during(first_ns, HitMerger::everything)) sink_.windows().mark_possible_loss(window_id);
    }
  }
  return !detached_ && round_capped_;
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
    if (loss_.during(first_ns, record.timestamp_ns)) sink_.windows().mark_possible_loss(record.window_id);
  }
  sink_.add(record);
}

void TracefsEngine::detach() {
  if (detached_ || !instance_) return;
  // Recording stops at once for every probe; disabling takes the uprobes
  // out of the target and waits for handlers still running.
  (void)instance_->set_tracing(false);
  (void)instance_->enable_group(group_, false);
  detached_ = true;
}

TraceCounters TracefsEngine::counters() const {
  TraceCounters counters = machine_.counters();
  const RingLoss& loss = loss_.totals();
  counters.overrun = loss.overrun;
  counters.commit_overrun = loss.commit_overrun;
  counters.dropped_events = loss.dropped_events;
  counters.lost_events = loss.total();
  counters.excluded_other_tgid_events = excluded_other_tgid_;
  counters.ambiguous_tid_events = ambiguous_tid_;
  counters.unparsed_records = unparsed_;
  return counters;
}

std::vector<std::pair<std::string, nlohmann::json>> TracefsEngine::details() const {
  std::vector<std::pair<std::string, nlohmann::json>> facts = {
      {"instance", instance_name_},
      {"event_group", group_},
      {"probe_path", paths_.empty() ? std::string() : paths_.front()},
      {"reader", "per_cpu_trace_pipe_raw"},
      {"clock", "mono"},
      {"tgid_filter", "user_space"},
      {"reaped_instances", reaped_.instances.size()},
      {"reaped_groups", reaped_.groups.size()},
  };
  for (size_t i = 1; i < paths_.size(); ++i) facts.emplace_back("probe_path_" + std::to_string(i), paths_[i]);
  if (!reaped_.failures.empty()) facts.emplace_back("reap_failure", reaped_.failures.front());
  return facts;
}

void TracefsEngine::cleanup() {
  readers_.close();  // an open file of the instance keeps it from being removed
  bool removed = true;
  if (instance_) {
    detach();
    removed = instance_->remove().ok();
    instance_.reset();
  }
  if (group_defined_) {
    removed = remove_tracefs_group(tracefs_, group_).failed == 0 && removed;
    group_defined_ = false;
  }
  // All gone: the watchdog exits untouched. Else it removes what is left
  // as soon as it is let go, with nothing of this process holding it.
  if (watchdog_ && removed) watchdog_->release();
  watchdog_.reset();
}

}  // namespace

Result<std::unique_ptr<TraceEngine>> start_tracefs_engine(const TracePlan& plan, const TracefsEngineOptions& options,
                                                          EventSink& sink) {
  if (auto ringbuf = check_ringbuf_bytes(options.ringbuf_bytes); !ringbuf) return ringbuf.error();
  auto tracefs = Tracefs::open();
  if (!tracefs) return tracefs.error();
  auto engine = std::make_unique<TracefsEngine>(*tracefs, plan, options, sink);
  if (auto started = engine->start(); !started) return started.error();  // the destructor cleans up
  return std::unique_ptr<TraceEngine>(std::move(engine));
}

}  // namespace xref
