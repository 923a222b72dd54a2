#include "attach/tracefs/recording.h"

#include <algorithm>
#include <map>

#include "attach/tracefs/groups.h"
#include "attach/tracefs/merge.h"
#include "monotonic_clock.h"

namespace xref {
namespace {

constexpr size_t kPagesPerRound = 64;  // per CPU, while recording
// The kernel parses a write to uprobe_events in chunks of 4 KiB.
constexpr size_t kWriteBatchBytes = 3500;

static_assert(TracefsRecording::everything == HitMerger<int>::everything);

Error with_prefix(Error error, const std::string& prefix) {
  error.message = prefix + error.message;
  return error;
}

}  // namespace

std::string tracefs_event_name(size_t index) { return "p" + std::to_string(index); }

std::string tracefs_event_line(const std::string& group, const TracefsEvent& event) {
  return (event.uretprobe ? "r:" : "p:") + group + "/" + event.name + " " + event.definition;
}

TracefsRecording::TracefsRecording(Tracefs tracefs, const TracefsRecordingOptions& options)
    : tracefs_(tracefs),
      options_(options),
      owner_(tracefs_owner_of_process(options.helper)),
      group_(tracefs_group_name(owner_)),
      instance_name_(tracefs_instance_name(owner_)),
      threads_(tracefs, options.target),
      loss_(0) {}

TracefsRecording::~TracefsRecording() { cleanup(); }

Result<std::unique_ptr<TracefsRecording>> TracefsRecording::open(const TracefsRecordingOptions& options,
                                                                 const std::vector<TracefsEvent>& events) {
  if (events.empty()) return make_error(ErrorCode::internal, "a tracefs recording without events");
  auto tracefs = Tracefs::open();
  if (!tracefs) return tracefs.error();
  std::unique_ptr<TracefsRecording> recording(new TracefsRecording(*tracefs, options));
  if (auto ready = recording->setup(events); !ready) return ready.error();  // the destructor cleans up
  return recording;
}

Result<void> TracefsRecording::setup(const std::vector<TracefsEvent>& events) {
  reaped_ = reap_tracefs_leftovers(tracefs_, owner_);
  if (auto watched = start_watchdog(events); !watched) return watched;

  group_defined_ = true;  // from here on, cleanup removes whatever part got defined
  if (auto defined = define(events); !defined) return defined;
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
  // The common fields lead every event's record alike.
  auto first = event_format(events.front().name);
  if (!first) return first.error();
  const EventField* pid = first->field("common_pid");
  if (pid == nullptr || pid->size > 8) {
    return make_error(ErrorCode::unsupported, events.front().name + ": the event format lacks common_pid");
  }
  pid_field_ = *pid;
  auto readers = RingReaders::open(instance_->directory(), instance_->page_size());
  if (!readers) return readers.error();
  readers_ = std::move(*readers);

  // Every probe is armed with the instance's recording off; start() then
  // turns recording on for all of them at once.
  if (auto enabled = instance_->enable_group(group_, true); !enabled) {
    Error error = with_prefix(enabled.error(), "enabling the uprobe events: ");
    if (const std::string kernel = tracefs_.last_error_log_line(); !kernel.empty()) {
      error.message += " (kernel: " + kernel + ")";
    }
    return error;
  }
  return {};
}

// Before anything is defined: from the first event on, a crash of this
// process leaves nothing behind.
Result<void> TracefsRecording::start_watchdog(const std::vector<TracefsEvent>& events) {
  TracefsWatchdogPlan plan{tracefs_.path("instances/" + instance_name_), tracefs_.path("uprobe_events"), {}};
  for (const TracefsEvent& event : events) plan.event_removals.push_back("-:" + group_ + "/" + event.name + "\n");
  auto watchdog = TracefsWatchdog::start(std::move(plan));
  if (!watchdog) return watchdog.error();
  watchdog_.emplace(std::move(*watchdog));
  return {};
}

// In batches the kernel parses whole; the kernel's own message from
// error_log is part of an error. The events defined before a failure stay
// until cleanup removes the group.
Result<void> TracefsRecording::define(const std::vector<TracefsEvent>& events) {
  std::string batch;
  size_t batch_first = 0;
  auto flush = [&](size_t next) -> Result<void> {
    if (batch.empty()) return {};
    auto written = tracefs_.append("uprobe_events", batch);
    if (!written) {
      Error error = written.error();
      error.message = "defining the uprobe events " + events[batch_first].name + ".." + events[next - 1].name +
                      " failed: " + error.message;
      if (const std::string kernel = tracefs_.last_error_log_line(); !kernel.empty()) {
        error.message += " (kernel: " + kernel + ")";
      }
      if (error.code == ErrorCode::file_error) error.code = ErrorCode::unsupported;
      return error;
    }
    batch.clear();
    batch_first = next;
    return {};
  };
  for (size_t index = 0; index < events.size(); ++index) {
    const std::string line = tracefs_event_line(group_, events[index]) + "\n";
    if (!batch.empty() && batch.size() + line.size() > kWriteBatchBytes) {
      if (auto flushed = flush(index); !flushed) return flushed;
    }
    batch += line;
  }
  return flush(events.size());
}

Result<EventFormat> TracefsRecording::event_format(const std::string& event) const {
  auto text = tracefs_.read("events/" + group_ + "/" + event + "/format");
  if (!text) return text.error();
  return parse_event_format(*text);
}

Result<void> TracefsRecording::start() {
  previous_round_ns_ = monotonic_ns();
  loss_ = LossTimeline(previous_round_ns_);
  return instance_->set_tracing(true);
}

void TracefsRecording::stop() {
  if (stopped_ || !instance_) return;
  // Recording stops at once for every event; disabling takes the uprobes
  // out of the target and waits for handlers still running.
  (void)instance_->set_tracing(false);
  (void)instance_->enable_group(group_, false);
  stopped_ = true;
}

uint64_t TracefsRecording::read_round(const TracefsRecordVisitor& visit, bool all) {
  threads_.refresh();
  std::map<int, uint64_t> last_read;  // per CPU, the newest stamp read
  const size_t all_pages = 2 * options_.ringbuf_bytes / instance_->page_size() + 16;
  const size_t max_pages = all ? all_pages : std::min(all_pages, kPagesPerRound);
  auto read = readers_.read_available(max_pages, [&](int cpu, std::span<const uint8_t> page) {
    const RingPageSummary summary =
        parse_ring_page(page, page_layout_, [&](uint64_t timestamp, std::span<const uint8_t> record) {
          last_read[cpu] = timestamp;
          auto tid = read_field(record, pid_field_);
          if (!tid) {
            ++unparsed_;
            return;
          }
          switch (threads_.classify(static_cast<uint32_t>(*tid))) {
            case ThreadOwner::target: visit(timestamp, static_cast<uint32_t>(*tid), record); break;
            case ThreadOwner::other: ++excluded_other_tgid_; break;
            case ThreadOwner::unknown: ++ambiguous_tid_; break;
          }
        });
    if (summary.malformed) ++unparsed_;
  });
  if (!read) return 0;  // a CPU not read at all: release nothing this round
  round_capped_ = *read > 0;
  if (*read == 0) return everything;
  // A CPU cut short still holds records: nothing stamped after what was
  // read of it may be released yet. Which CPU it was is not known, so the
  // oldest of the newest stamps read bounds all.
  uint64_t complete_below = 0;
  for (const auto& [cpu, newest] : last_read) {
    complete_below = complete_below == 0 ? newest : std::min(complete_below, newest);
  }
  return complete_below;
}

uint64_t TracefsRecording::drain(const TracefsRecordVisitor& visit, bool all) {
  if (!instance_) return 0;
  all = all || stopped_;
  const uint64_t round_ns = monotonic_ns();
  uint64_t complete_below = read_round(visit, all);
  // Until the buffers are empty (bounded, should reads keep failing).
  for (int round = 0; all && complete_below != everything && round < 64; ++round) {
    complete_below = read_round(visit, all);
  }
  if (auto totals = instance_->loss()) loss_.update(*totals, monotonic_ns());
  const uint64_t limit = all ? everything : std::min(previous_round_ns_, complete_below);
  previous_round_ns_ = round_ns;
  return limit;
}

void TracefsRecording::cleanup() {
  readers_.close();  // an open file of the instance keeps it from being removed
  bool removed = true;
  if (instance_) {
    stop();
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

}  // namespace xref
