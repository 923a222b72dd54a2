// One helper's uprobe events recording into its private ftrace instance:
// what every tracefs engine (`xref trace` and `xref probe` with --backend
// tracefs) does around its own events and records.
//
// Opening it reaps what dead helpers left (reaper.h), starts the watchdog
// (watchdog.h) before anything is defined, defines the events in the
// helper's group (owner.h) in the global uprobe_events, makes the instance
// (instance.h) and enables the events there with recording off, and opens
// the per-CPU readers (ring.h). start() turns recording on for every event
// at once; stop() turns it off and disables the events, which takes the
// uprobes out of the target and waits for handlers still running. Each
// drain reads what the buffers hold, keeps the records of the target's
// threads (threads.h), checks the loss counters (loss.h), and says up to
// which timestamp every record has been handed over (merge.h). Everything
// is removed when it goes, on every path the helper lives through, and by
// the watchdog when it does not.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attach/tracefs/format.h"
#include "attach/tracefs/fs.h"
#include "attach/tracefs/instance.h"
#include "attach/tracefs/loss.h"
#include "attach/tracefs/owner.h"
#include "attach/tracefs/reaper.h"
#include "attach/tracefs/ring.h"
#include "attach/tracefs/threads.h"
#include "attach/tracefs/watchdog.h"
#include "result.h"

namespace xref {

// One uprobe event, without its group (the recording's).
struct TracefsEvent {
  std::string name;         // unique in the group: tracefs_event_name(i)
  bool uretprobe = false;   // an r: event, else p:
  std::string definition;   // the file, the offset, the fetch args: "/path/to/exe:0x1c20 sp=%sp id=+0(%di):u64"
};

std::string tracefs_event_name(size_t index);  // "p17"

// The uprobe_events line: "p:xref_4242_81234/p0 /path/to/exe:0x1c20 sp=%sp".
std::string tracefs_event_line(const std::string& group, const TracefsEvent& event);

struct TracefsRecordingOptions {
  pid_t target = 0;
  pid_t helper = 0;                   // with its start time, names the group and the instance
  uint64_t ringbuf_bytes = 4u << 20;  // per CPU
};

// A record of one of the target's threads, as its CPU's buffer holds it:
// its timestamp (mono), its thread (common_pid), its bytes.
using TracefsRecordVisitor =
    std::function<void(uint64_t timestamp_ns, uint32_t tid, std::span<const uint8_t> record)>;

class TracefsRecording {
 public:
  static constexpr uint64_t everything = ~uint64_t{0};

  // Everything up to recording, which stays off until start(). On an error
  // whatever was made is removed again.
  static Result<std::unique_ptr<TracefsRecording>> open(const TracefsRecordingOptions& options,
                                                        const std::vector<TracefsEvent>& events);
  ~TracefsRecording();
  TracefsRecording(const TracefsRecording&) = delete;
  TracefsRecording& operator=(const TracefsRecording&) = delete;

  const Tracefs& tracefs() const { return tracefs_; }
  const std::string& group() const { return group_; }
  const std::string& instance_name() const { return instance_name_; }
  const ReapReport& reaped() const { return reaped_; }
  // events/GROUP/EVENT/format, parsed.
  Result<EventFormat> event_format(const std::string& event) const;

  // Recording on, for every event at once.
  Result<void> start();
  // Recording off and the events disabled: nothing is recorded afterwards.
  void stop();
  bool stopped() const { return stopped_; }

  // Hands every record of the target's threads that the buffers hold to
  // `visit`, each CPU's in order, and returns the timestamp below which
  // every record has been handed over: the limit for HitMerger::release
  // (merge.h). While recording, a bounded number of pages per CPU, so a
  // caller's deadline and signals come round however busy the target is;
  // after stop(), or with `all` (a debugger's stop: the target's threads
  // are stopped), until the buffers are empty, and everything is released.
  uint64_t drain(const TracefsRecordVisitor& visit, bool all = false);
  // The last drain left pages unread.
  bool more() const { return !stopped_ && round_capped_; }

  // What the kernel's per-CPU stats counted lost, and when.
  const LossTimeline& loss() const { return loss_; }
  uint64_t excluded_other_tgid() const { return excluded_other_tgid_; }  // records of other processes
  uint64_t ambiguous_tid() const { return ambiguous_tid_; }              // records no source could place
  uint64_t unparsed() const { return unparsed_; }                        // pages or records that made no sense

 private:
  TracefsRecording(Tracefs tracefs, const TracefsRecordingOptions& options);
  Result<void> setup(const std::vector<TracefsEvent>& events);
  Result<void> start_watchdog(const std::vector<TracefsEvent>& events);
  Result<void> define(const std::vector<TracefsEvent>& events);
  uint64_t read_round(const TracefsRecordVisitor& visit, bool all);
  void cleanup();

  Tracefs tracefs_;
  TracefsRecordingOptions options_;
  TracefsOwner owner_;
  std::string group_;
  std::string instance_name_;
  ReapReport reaped_;
  std::optional<TracefsWatchdog> watchdog_;
  bool group_defined_ = false;
  std::optional<TracefsInstance> instance_;
  RingPageLayout page_layout_;
  RingReaders readers_;
  EventField pid_field_;
  ThreadClassifier threads_;
  LossTimeline loss_;
  uint64_t previous_round_ns_ = 0;
  bool stopped_ = false;
  bool round_capped_ = false;
  uint64_t excluded_other_tgid_ = 0;
  uint64_t ambiguous_tid_ = 0;
  uint64_t unparsed_ = 0;
};

}  // namespace xref
