#include "watch/hw_engine.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "attach/breakpoint_self_test.h"
#include "attach/libbpf_log.h"
#include "attach/ring_drain.h"
#include "monotonic_clock.h"
#include "watch/detail.h"
#include "watch/hw_breakpoints.h"
#include "watch/hw_rules.h"
#include "watch/hw_threads.h"
#include "watch/process_memory.h"
#include "watch/trap_writers.h"
#include "watch/watch_records.h"
#include "probe_abi.h"
#include "watch/stop_when.h"
#include "watch_hw.skel.h"

namespace xref {
namespace {

// How often a drain lists the target's threads again (only to report the
// threads that started after arming; their breakpoints are inherited).
constexpr uint64_t kThreadRescanNs = 50'000'000;
// Rounds of listing the threads while arming: a thread started while the
// others were armed may have missed inheriting the breakpoints.
constexpr int kArmRescans = 8;

// Up to 8 bytes of the target at `address`, little-endian as it holds them
// (read_target_bytes, the one reader of the target's memory watch has).
bool read_target(pid_t pid, uint64_t address, uint32_t length, uint64_t& value) {
  value = 0;
  const Result<std::vector<uint8_t>> bytes = read_target_bytes(pid, address, length);
  if (!bytes) return false;
  std::memcpy(&value, bytes->data(), std::min<size_t>(bytes->size(), sizeof value));
  return true;
}

class HwWatchEngine final : public WatchEngine {
 public:
  HwWatchEngine(const WatchPlan& plan, WatchRecordSink sink) : plan_(plan), sink_(std::move(sink)) {}
  ~HwWatchEngine() override { detach(); }

  Result<void> start(const WatchRequest& request);

  const std::string& backend() const override { return backend_; }
  Result<void> arm() override;
  Result<bool> drain() override;
  int wake_fd() override { return ring_ ? ring_->wake_fd() : -1; }
  void woken() override {
    if (ring_) ring_->clear_wake();
  }
  Result<void> move_range(uint32_t range, uint64_t address) override;
  bool until_hits_reached() const override {
    return skeleton_ != nullptr && __atomic_load_n(&skeleton_->bss->stopped, __ATOMIC_RELAXED) != 0;
  }
  void detach() override;
  std::optional<WatchStop> stop() const override {
    return skeleton_ == nullptr ? std::nullopt : read_watch_stop(skeleton_->bss->stop_info);
  }
  std::vector<WatchRangeCounts> range_counts() const override;
  std::vector<std::string> warnings() const override;
  std::vector<WatchStackCount> stack_counts() const override {
    if (skeleton_ == nullptr || !callers_) return {};
    return read_watch_stacks(skeleton_->maps.stacks, skeleton_->maps.stack_traces);
  }

 private:
  Result<void> arm_threads();
  void set_range(uint32_t index, const xref_watch_range& range);
  void set_previous(uint32_t index, uint64_t bytes);
  uint64_t previous(uint32_t index) const;
  void on_record(const void* data, size_t size);
  void resync_previous();
  void rescan_threads();

  WatchPlan plan_;
  WatchRecordSink sink_;
  std::string backend_ = "hw";
  watch_hw_bpf* skeleton_ = nullptr;
  HwBreakpoints breakpoints_;
  std::unique_ptr<RingDrain> ring_;
  std::vector<xref_watch_range> ranges_;
  std::vector<HwBreakpointSpec> specs_;
  std::set<uint32_t> armed_threads_;   // breakpoints opened on them
  std::set<uint32_t> later_threads_;   // started after arming: inherited breakpoints
  std::vector<std::string> arming_warnings_;
  uint64_t armed_ns_ = 0;              // CLOCK_MONOTONIC
  uint64_t armed_boottime_ns_ = 0;
  uint64_t last_rescan_ns_ = 0;
  std::unique_ptr<TrapWriters> writers_;
  bool detached_ = false;
  bool callers_ = false;
};

Result<void> HwWatchEngine::start(const WatchRequest& request) {
  auto type = hw_breakpoint_type(request.access);
  if (!type) return type.error();
  configure_libbpf_logging();
  skeleton_ = watch_hw_bpf__open();
  if (skeleton_ == nullptr) {
    return make_error(ErrorCode::internal, "opening the embedded watch_hw program failed: " + libbpf_message(-errno));
  }
  skeleton_->rodata->target_tgid = static_cast<uint32_t>(plan_.pid);
  skeleton_->rodata->every = request.every == 0 ? 1 : request.every;
  skeleton_->rodata->first = request.first;
  skeleton_->rodata->until_hits = request.until_hits;
  skeleton_->rodata->max_records = request.max_events;
  skeleton_->rodata->stop_signal = plan_.stop_filter ? XREF_PROBE_STOP_SIGNAL : 0;
  skeleton_->rodata->stop_skip = request.stop_skip;
  bpf_map__set_max_entries(skeleton_->maps.records, 1u << 20);
  set_watch_detail_switches(*skeleton_->rodata, plan_, request);
  size_watch_stack_map(skeleton_->maps.stack_traces, request.callers);
  callers_ = request.callers;
  if (const int loaded = watch_hw_bpf__load(skeleton_); loaded != 0) {
    return bpf_load_error(loaded, "the watch_hw program");
  }
  if (auto stop = fill_watch_stop_map(plan_, skeleton_->maps.stop_filter); !stop) return stop.error();
  if (auto filled = fill_watch_detail_maps(plan_, skeleton_->maps.fetches, skeleton_->maps.filter); !filled) {
    return filled.error();
  }
  ranges_.resize(plan_.ranges.size());
  for (uint32_t index = 0; index < plan_.ranges.size(); ++index) {
    const WatchRange& range = plan_.ranges[index];
    auto length = hw_breakpoint_length(range, index);
    if (!length) return length.error();
    specs_.push_back({range.parked ? 0 : range.address, *length, *type});
    xref_watch_range& slot = ranges_[index];
    std::memset(&slot, 0, sizeof slot);
    slot.address = range.parked ? 0 : range.address;
    slot.length = range.length;
    slot.changed_only = request.changed ? 1 : 0;
    slot.wake = range.is_slot ? 1 : 0;  // a --follow slot's write wakes the helper (watch_abi.h)
    set_range(index, slot);
    uint64_t bytes = 0;
    read_target(plan_.pid, range.address, range.length, bytes);
    set_previous(index, bytes);
  }
  skeleton_->bss->range_count = static_cast<uint32_t>(ranges_.size());
  auto ring = RingDrain::open(bpf_map__fd(skeleton_->maps.records),
                              [this](const void* data, size_t size) { on_record(data, size); });
  if (!ring) return ring.error();
  ring_ = std::move(*ring);
  writers_ = std::make_unique<TrapWriters>(plan_.pid);
  writers_->read_address_space();
  return arm_threads();
}

// Breakpoints on every thread /proc/PID/task lists, then again on the
// threads that appeared meanwhile, until a listing brings none.
Result<void> HwWatchEngine::arm_threads() {
  for (int round = 0; round < kArmRescans; ++round) {
    bool new_threads = false;
    for (const TargetThread& thread : list_target_threads(plan_.pid)) {
      if (armed_threads_.count(thread.tid)) continue;
      new_threads = true;
      bool alive = true;
      for (uint32_t range = 0; range < specs_.size() && alive; ++range) {
        if (plan_.ranges[range].parked || specs_[range].address == 0) continue;  // parked at a null pointer
        auto opened = breakpoints_.open(thread.tid, range, specs_[range], skeleton_->progs.watch_hw_hit);
        if (!opened) return opened.error();
        alive = *opened;
      }
      if (!alive) continue;
      if (round > 0) {
        arming_warnings_.push_back("thread " + std::to_string(thread.tid) +
                                   " started while xref armed the others: it may hold an inherited breakpoint "
                                   "besides its own, so a write of it may be recorded twice (the second with "
                                   "old == new)");
      }
      armed_threads_.insert(thread.tid);
    }
    if (!new_threads) return {};
  }
  arming_warnings_.push_back("threads kept starting while xref armed breakpoints (" + std::to_string(kArmRescans) +
                             " listings): the threads started last are watched through inherited breakpoints "
                             "only if their creator was armed first");
  return {};
}

void HwWatchEngine::set_range(uint32_t index, const xref_watch_range& range) {
  bpf_map__update_elem(skeleton_->maps.ranges, &index, sizeof index, &range, sizeof range, BPF_ANY);
}

void HwWatchEngine::set_previous(uint32_t index, uint64_t bytes) {
  bpf_map__update_elem(skeleton_->maps.previous, &index, sizeof index, &bytes, sizeof bytes, BPF_ANY);
}

uint64_t HwWatchEngine::previous(uint32_t index) const {
  uint64_t bytes = 0;
  bpf_map__lookup_elem(skeleton_->maps.previous, &index, sizeof index, &bytes, sizeof bytes, 0);
  return bytes;
}

Result<void> HwWatchEngine::arm() {
  if (skeleton_ == nullptr) return make_error(ErrorCode::internal, "the hw watch engine is not started");
  // The bytes as they are now: the first write of each range gets them as old.
  for (uint32_t index = 0; index < ranges_.size(); ++index) {
    if (ranges_[index].address == 0) continue;
    uint64_t bytes = 0;
    if (read_target(plan_.pid, ranges_[index].address, ranges_[index].length, bytes)) set_previous(index, bytes);
  }
  breakpoints_.enable_all();
  armed_ns_ = monotonic_ns();
  armed_boottime_ns_ = boottime_ns();
  last_rescan_ns_ = armed_ns_;
  __atomic_store_n(&skeleton_->bss->armed, 1, __ATOMIC_SEQ_CST);
  return {};
}

void HwWatchEngine::on_record(const void* data, size_t size) {
  if (size < sizeof(xref_watch_record)) return;
  xref_watch_record raw;
  std::memcpy(&raw, data, sizeof raw);
  WatchRecord record = decode_watch_record(raw);
  record.site = XREF_WATCH_SITE_HW;
  record.writer_pc = writers_->writer_of(raw.pc, &record.writer_text);
  decode_watch_detail(data, size, plan_, skeleton_->maps.stack_traces, record);
  sink_(std::move(record));
}

// A range whose bytes differ from what the program last saw changed without
// a trap: the kernel wrote them (read(2) into it; user breakpoints exclude the
// kernel). The run loop reports that as an unobserved change (it re-reads
// every range at each drain); here the next trap is asked to take those bytes
// as its old value, if no trap came while they were read (the program counts
// each range's traps). A user write already in memory whose trap has not run
// yet looks the same from here; that trap refuses the request, whose bytes
// are its own new ones.
void HwWatchEngine::resync_previous() {
  for (uint32_t index = 0; index < ranges_.size() && index < XREF_WATCH_MAX_RANGES; ++index) {
    const xref_watch_range& range = ranges_[index];
    xref_watch_resync& request = skeleton_->bss->resync[index];
    if (range.address == 0) continue;
    const uint64_t traps = __atomic_load_n(&skeleton_->bss->traps[index], __ATOMIC_ACQUIRE);
    const uint64_t before = previous(index);
    uint64_t bytes = 0;
    if (!read_target(plan_.pid, range.address, range.length, bytes)) continue;
    if (__atomic_load_n(&skeleton_->bss->traps[index], __ATOMIC_ACQUIRE) != traps) continue;
    if (__atomic_load_n(&request.pending, __ATOMIC_ACQUIRE) != 0) {
      // Asked before, not yet taken: still right, or taken back when the
      // kernel wrote again since (unless a trap takes it first).
      if (request.bytes == bytes) continue;
      uint64_t asked = 1;
      if (!__atomic_compare_exchange_n(&request.pending, &asked, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    }
    if (bytes == before) continue;
    request.bytes = bytes;
    request.traps_seen = traps;
    __atomic_store_n(&request.pending, 1, __ATOMIC_RELEASE);
  }
}

void HwWatchEngine::rescan_threads() {
  last_rescan_ns_ = monotonic_ns();
  for (const TargetThread& thread : list_target_threads(plan_.pid)) {
    if (armed_threads_.count(thread.tid) == 0) later_threads_.insert(thread.tid);
  }
}

Result<bool> HwWatchEngine::drain() {
  if (ring_ == nullptr) return false;
  const bool more = ring_->round();
  if (detached_) return false;
  if (!more) resync_previous();
  if (monotonic_ns() - last_rescan_ns_ >= kThreadRescanNs) rescan_threads();
  return more;
}

Result<void> HwWatchEngine::move_range(uint32_t index, uint64_t address) {
  if (index >= ranges_.size()) {
    return make_error(ErrorCode::internal, "move_range: no range [" + std::to_string(index) + "]");
  }
  xref_watch_range& range = ranges_[index];
  if (address != 0) {
    WatchRange moved = plan_.ranges[index];
    moved.address = address;
    if (auto length = hw_breakpoint_length(moved, index); !length) return length.error();
  }
  range.generation += 1;
  if (address == 0) {  // parked: the slot holds a null pointer
    breakpoints_.disable_range(index);
    range.address = 0;
    set_range(index, range);
    return {};
  }
  // The new place's bytes first, then the range, then the breakpoints: a
  // trap at the new place finds its previous bytes; one still at the old
  // place is told apart by its address (recorded with the old generation).
  uint64_t bytes = 0;
  read_target(plan_.pid, address, range.length, bytes);
  if (index < XREF_WATCH_MAX_RANGES) __atomic_store_n(&skeleton_->bss->resync[index].pending, 0, __ATOMIC_RELEASE);
  set_previous(index, bytes);
  range.address = address;
  set_range(index, range);
  if (breakpoints_.events_of(index) == 0) {
    // Parked since the start (a null slot at attach): open its breakpoints now.
    specs_[index].address = address;
    for (const uint32_t tid : armed_threads_) {
      auto opened = breakpoints_.open(tid, index, specs_[index], skeleton_->progs.watch_hw_hit);
      if (!opened) return opened.error();
    }
    return {};
  }
  specs_[index].address = address;
  return breakpoints_.move(index, address);
}

void HwWatchEngine::detach() {
  if (detached_) return;
  detached_ = true;
  if (skeleton_ != nullptr) __atomic_store_n(&skeleton_->bss->detaching, 1, __ATOMIC_SEQ_CST);
  breakpoints_.close_all();
  if (ring_ != nullptr) {
    ring_->unbound();
    ring_->round();
  }
}

std::vector<WatchRangeCounts> HwWatchEngine::range_counts() const {
  if (skeleton_ == nullptr) return std::vector<WatchRangeCounts>(ranges_.size());
  return sum_range_counts(skeleton_->maps.counts, ranges_.size());
}

std::vector<std::string> HwWatchEngine::warnings() const {
  std::vector<std::string> warnings = arming_warnings_;
  if (!later_threads_.empty()) {
    warnings.push_back(std::to_string(later_threads_.size()) +
                       " threads started after arming: watched from their first instruction through the "
                       "breakpoints they inherited from the thread that created them (perf attr.inherit)");
  }
  if (skeleton_ != nullptr) {
    const uint64_t unknown = __atomic_load_n(&skeleton_->bss->unknown_range, __ATOMIC_RELAXED);
    if (unknown > 0) {
      warnings.push_back(std::to_string(unknown) +
                         " traps of inherited breakpoints matched no range (a range moved meanwhile): not recorded");
    }
    const uint64_t over = __atomic_load_n(&skeleton_->bss->over_max_records, __ATOMIC_RELAXED);
    if (over > 0) warnings.push_back(std::to_string(over) + " passing writes past --max-events: counted, not recorded");
  }
  if (writers_ != nullptr) {
    for (std::string& warning : writers_->warnings()) warnings.push_back(std::move(warning));
  }
  return warnings;
}

}  // namespace

bool hardware_breakpoints_fire(std::string& words) {
  const BreakpointSelfTest& test = breakpoint_self_test();
  words = self_test_words(test);
  return test.fires;
}

Result<void> hw_request_fits(const WatchPlan& plan, const WatchRequest& request) {
  return check_hw_rules(plan, request);
}

Result<void> hw_registers_fire() { return check_hw_fires(breakpoint_self_test()); }

Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine(const Target& target, const WatchPlan& plan,
                                                           const WatchRequest& request, WatchRecordSink sink) {
  (void)target;  // the plan holds the pid; the writers read the process's own mappings as code is mapped
  if (auto rules = check_hw_rules(plan, request); !rules) return rules.error();
  if (auto fires = hw_registers_fire(); !fires) return fires.error();
  return start_hw_watch_engine_untested(plan, request, std::move(sink));
}

Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine_untested(const WatchPlan& plan,
                                                                    const WatchRequest& request,
                                                                    WatchRecordSink sink) {
  if (auto rules = check_hw_rules(plan, request); !rules) return rules.error();
  auto engine = std::make_unique<HwWatchEngine>(plan, std::move(sink));
  if (auto started = engine->start(request); !started) return started.error();
  return std::unique_ptr<WatchEngine>(std::move(engine));
}

}  // namespace xref
