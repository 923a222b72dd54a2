#include "watch/run.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "attach/run_loop.h"
#include "attach/stop_signals.h"
#include "monotonic_clock.h"
#include "process/thread_states.h"
#include "watch/process_memory.h"
#include "watch/stop_when.h"

namespace xref {
namespace {

// What the helper knows of one range's bytes.
struct Known {
  std::vector<uint8_t> bytes;
  uint64_t at_ns = 0;            // when they were last known
  bool readable = false;
  uint64_t records = 0;          // records of this range applied
  // Bytes a record wrote since the last check: a store's record can come
  // before the store runs (its thread may wait between the two), so a
  // difference there waits for the next check.
  std::vector<bool> touched;
};

class Watcher {
 public:
  Watcher(const Target& target, WatchPlan& plan, const WatchRequest& request, WatchRun& run)
      : target_(target), plan_(plan), request_(request), run_(run), known_(plan.ranges.size()) {
    run_.ranges.resize(plan.ranges.size());
    for (size_t index = 0; index < plan.ranges.size(); ++index) {
      run_.ranges[index].addresses.push_back(plan.ranges[index].parked ? 0 : plan.ranges[index].address);
    }
    // --filter keeps writes out of the records: a change then may be one of them.
    exact_ = request.every <= 1 && request.first == 0 && request.filter.empty();
    run_.unobserved_exact = exact_;
  }

  void set_engine(WatchEngine* engine) { engine_ = engine; }
  void set_stream(std::function<void(const WatchRecord&, const WatchRun&)> streamed) { streamed_ = std::move(streamed); }

  void read_all_known() {
    for (uint32_t index = 0; index < plan_.ranges.size(); ++index) reread(index, monotonic_ns());
  }

  // A record from the engine, in the order it came.
  void take(WatchRecord&& record) {
    pending_.push_back(std::move(record));
  }

  // The records taken since the last call, writes in sequence order.
  void settle() {
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const WatchRecord& a, const WatchRecord& b) { return a.sequence < b.sequence; });
    std::vector<WatchRecord> batch;
    batch.swap(pending_);
    for (WatchRecord& record : batch) apply(std::move(record));
  }

  // The drain-time check: every range re-read; bytes that differ from what
  // the records left are read again after one more drain, and a difference
  // that stayed, with no record of the range between, is an unobserved
  // change. (A store whose record came before it ran has run by then.)
  void check() {
    const std::vector<WatchRangeCounts> counts = engine_->range_counts();
    struct Differing {
      uint32_t index;
      std::vector<uint8_t> bytes;
      uint64_t read_ns;
      uint64_t records;
    };
    std::vector<Differing> differing;
    for (uint32_t index = 0; index < plan_.ranges.size(); ++index) {
      const WatchRange& range = plan_.ranges[index];
      Known& known = known_[index];
      if (range.parked || !known.readable) continue;
      auto now_bytes = read_target_bytes(plan_.pid, range.address, range.length);
      std::vector<bool> touched(range.length, false);
      touched.swap(known.touched);
      if (!now_bytes || *now_bytes == known.bytes) continue;
      bool recent = false;
      for (size_t at = 0; at < now_bytes->size() && at < touched.size(); ++at) {
        recent |= touched[at] && (*now_bytes)[at] != known.bytes[at];
      }
      if (recent) continue;
      const bool lossy = !exact_ || (index < counts.size() && counts[index].records_lost + counts[index].in_flight_full > 0);
      if (lossy) {
        known.bytes = *now_bytes;
        known.at_ns = monotonic_ns();
        ++run_.ranges[index].resyncs;
        continue;
      }
      differing.push_back({index, std::move(*now_bytes), monotonic_ns(), known.records});
    }
    if (differing.empty()) return;
    // A write in flight (its store ran, its record is not out) is left for
    // the next drain; its record goes out before it leaves the in-flight
    // map, so the drain after the second look takes any that left.
    std::vector<uint32_t> busy = engine_->ranges_in_flight();
    if (auto drained = engine_->drain(); drained) settle();
    std::vector<std::vector<uint8_t>> again(differing.size());
    for (size_t at = 0; at < differing.size(); ++at) {
      const WatchRange& range = plan_.ranges[differing[at].index];
      if (auto bytes = read_target_bytes(plan_.pid, range.address, range.length)) again[at] = std::move(*bytes);
    }
    const std::vector<uint32_t> still = engine_->ranges_in_flight();
    busy.insert(busy.end(), still.begin(), still.end());
    if (auto drained = engine_->drain(); drained) settle();
    for (size_t at = 0; at < differing.size(); ++at) {
      const Differing& seen = differing[at];
      const WatchRange& range = plan_.ranges[seen.index];
      Known& known = known_[seen.index];
      if (range.parked || known.records != seen.records) continue;
      if (std::find(busy.begin(), busy.end(), seen.index) != busy.end()) continue;
      if (again[at] != seen.bytes || again[at] == known.bytes) continue;
      report_unobserved(seen.index, again[at], known.at_ns, seen.read_ns);
    }
  }

 private:
  void keep(WatchRecord&& record) {
    if (streamed_) streamed_(record, run_);
    run_.records.push_back(std::move(record));
  }

  void reread(uint32_t index, uint64_t now) {
    const WatchRange& range = plan_.ranges[index];
    Known& known = known_[index];
    known.readable = false;
    if (range.parked) return;
    auto bytes = read_target_bytes(plan_.pid, range.address, range.length);
    if (!bytes) return;
    known.bytes = std::move(*bytes);
    known.at_ns = now;
    known.readable = true;
  }

  // Bytes of range `index` differ from what the records left: one record
  // over the span that differs.
  void report_unobserved(uint32_t index, const std::vector<uint8_t>& now_bytes, uint64_t since_ns, uint64_t seen_ns) {
    Known& known = known_[index];
    size_t first = 0, last = now_bytes.size();
    while (first < now_bytes.size() && now_bytes[first] == known.bytes[first]) ++first;
    while (last > first && now_bytes[last - 1] == known.bytes[last - 1]) --last;
    WatchRecord record;
    record.kind = WatchRecordKind::unobserved_change;
    record.timestamp_ns = seen_ns;
    record.since_ns = since_ns;
    record.range = index;
    record.generation = run_.ranges[index].generation;
    record.address = plan_.ranges[index].address + first;
    record.length = static_cast<uint32_t>(last - first);
    const size_t kept = std::min<size_t>(last - first, XREF_WATCH_VALUE_BYTES);
    record.old_bytes.assign(known.bytes.begin() + static_cast<long>(first), known.bytes.begin() + static_cast<long>(first + kept));
    record.new_bytes.assign(now_bytes.begin() + static_cast<long>(first), now_bytes.begin() + static_cast<long>(first + kept));
    if (last - first > XREF_WATCH_VALUE_BYTES) record.flags |= XREF_WATCH_R_CUT;
    known.bytes = now_bytes;
    known.at_ns = seen_ns;
    ++run_.ranges[index].unobserved;
    const uint64_t slot_time = seen_ns;
    keep(std::move(record));
    follow_slot(index, slot_time);
  }

  void apply(WatchRecord&& record) {
    if (record.kind != WatchRecordKind::write || record.range >= plan_.ranges.size()) {
      keep(std::move(record));
      return;
    }
    const uint32_t index = record.range;
    const WatchRange& range = plan_.ranges[index];
    Known& known = known_[index];
    // A write seen against the range's old place (before a --follow move).
    const bool current = record.generation == run_.ranges[index].generation && !range.parked &&
                         record.address >= range.address && record.address - range.address < range.length;
    if (!current || !known.readable) {
      keep(std::move(record));
      return;
    }
    const size_t offset = record.address - range.address;
    const size_t kept = std::min(record.old_bytes.size(), known.bytes.size() - offset);
    const bool lossy = !exact_;
    if (!lossy) old_from_records(record, known.bytes, offset, kept);
    if (!lossy && !(record.flags & XREF_WATCH_R_OLD_UNREAD) &&
        !std::equal(record.old_bytes.begin(), record.old_bytes.begin() + static_cast<long>(kept),
                    known.bytes.begin() + static_cast<long>(offset))) {
      // Something wrote the range between what we knew and this write.
      std::vector<uint8_t> before = known.bytes;
      std::copy(record.old_bytes.begin(), record.old_bytes.begin() + static_cast<long>(kept),
                before.begin() + static_cast<long>(offset));
      report_unobserved(index, before, known.at_ns, record.timestamp_ns);
    }
    if (!(record.flags & XREF_WATCH_R_NEW_UNREAD)) {
      std::copy(record.new_bytes.begin(), record.new_bytes.begin() + static_cast<long>(std::min(kept, record.new_bytes.size())),
                known.bytes.begin() + static_cast<long>(offset));
    }
    known.at_ns = record.timestamp_ns;
    ++known.records;
    known.touched.resize(range.length, false);
    for (size_t at = offset; at < offset + kept && at < known.touched.size(); ++at) known.touched[at] = true;
    const uint64_t write_ns = record.timestamp_ns;
    keep(std::move(record));
    follow_slot(index, write_ns);
  }

  // A lock or/and is seen at its next instruction (the kernel takes no
  // uprobe on a lock prefix), and neither leaves its old value anywhere:
  // or sets, and sets nothing back, the bits its source has; and clears
  // the bits its source lacks. When every write is recorded, the bytes the
  // records before it left are its old value, if they agree with what the
  // instruction does: every bit or/and kept equal in old and new, no bit
  // set by or cleared, none cleared by and set. A write between the store
  // and its record, or one no probe saw, can make them disagree: the old
  // value then stays unknown.
  void old_from_records(WatchRecord& record, const std::vector<uint8_t>& known, size_t offset, size_t kept) {
    if (!(record.flags & XREF_WATCH_R_OLD_UNREAD) || (record.flags & XREF_WATCH_R_NEW_UNREAD)) return;
    if (record.site >= plan_.sites.size()) return;
    const WatchSite& site = plan_.sites[record.site];
    if (site.operand.kind != XREF_STORE_AFTER_ONLY || site.operand.contract != XREF_AFTER_ONLY_OLD_UNKNOWN) return;
    const bool is_or = site.text.rfind("lock or ", 0) == 0;
    const bool is_and = site.text.rfind("lock and ", 0) == 0;
    if ((!is_or && !is_and) || kept == 0 || record.new_bytes.size() < kept) return;
    // A lost record leaves the known bytes behind (counted per range in BPF).
    const std::vector<WatchRangeCounts> counts = engine_->range_counts();
    if (record.range < counts.size() && counts[record.range].records_lost + counts[record.range].in_flight_full > 0) return;
    for (size_t at = 0; at < kept; ++at) {
      const uint8_t old_byte = known[offset + at], new_byte = record.new_bytes[at];
      if (is_or ? (old_byte & ~new_byte) != 0 : (new_byte & ~old_byte) != 0) return;
    }
    record.old_bytes.assign(known.begin() + static_cast<long>(offset), known.begin() + static_cast<long>(offset + kept));
    record.flags &= ~XREF_WATCH_R_OLD_UNREAD;
    record.flags |= kWatchOldFromRecords;
  }

  // Range `slot` is a --follow slot whose bytes may now point elsewhere.
  void follow_slot(uint32_t slot, uint64_t slot_write_ns) {
    if (!plan_.ranges[slot].is_slot || known_[slot].bytes.size() < 8) return;
    uint64_t pointer = 0;
    std::memcpy(&pointer, known_[slot].bytes.data(), 8);
    for (uint32_t index = 0; index < plan_.ranges.size(); ++index) {
      WatchRange& dependent = plan_.ranges[index];
      if (!dependent.follow_slot || *dependent.follow_slot != slot) continue;
      const uint64_t target = pointer == 0 ? 0 : pointer + static_cast<uint64_t>(dependent.follow_offset);
      if (target == dependent.address && (pointer == 0) == dependent.parked) continue;
      if (auto moved = engine_->move_range(index, target); !moved) {
        run_.warnings.push_back("rearm_failed: " + dependent.spelled + ": " + moved.error().message);
        continue;
      }
      const uint64_t now = monotonic_ns();
      dependent.address = target;
      dependent.parked = pointer == 0;
      WatchRangeState& state = run_.ranges[index];
      ++state.generation;
      ++state.rearms;
      state.addresses.push_back(target);
      state.unwatched_ns_longest = std::max(state.unwatched_ns_longest, now > slot_write_ns ? now - slot_write_ns : 0);
      WatchRecord record;
      record.kind = WatchRecordKind::rearm;
      record.timestamp_ns = now;
      record.since_ns = slot_write_ns;
      record.range = index;
      record.generation = state.generation;
      record.address = target;
      record.length = dependent.parked ? 0 : dependent.length;
      keep(std::move(record));
      reread(index, now);
    }
  }

  const Target& target_;
  WatchPlan& plan_;
  const WatchRequest& request_;
  WatchRun& run_;
  WatchEngine* engine_ = nullptr;
  std::vector<Known> known_;
  std::vector<WatchRecord> pending_;
  std::function<void(const WatchRecord&, const WatchRun&)> streamed_;
  bool exact_ = true;
};

}  // namespace

Result<WatchRun> run_watch(const Target& target, WatchPlan& plan, const WatchRequest& request,
                           const WatchBackendChoice& choice, const WatchCallbacks& callbacks) {
  std::optional<StopSignals> signals;
  if (callbacks.cancel_fd < 0) signals.emplace();
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  auto stop_filter = compile_watch_stop(request);
  if (!stop_filter) return stop_filter.error();
  plan.stop_filter = *stop_filter;
  WatchRun run;
  run.backend = choice.backend;
  run.backend_reason = choice.reason;
  Watcher watcher(target, plan, request, run);
  watcher.set_stream(callbacks.streamed);
  auto engine = start_watch_engine(target, plan, request, choice,
                                   [&watcher](WatchRecord&& record) { watcher.take(std::move(record)); });
  if (!engine) {
    if (auto alive = target.process.recheck(); !alive) return alive.error();
    return engine.error();
  }
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  watcher.set_engine(engine->get());
  watcher.read_all_known();
  if (auto armed = (*engine)->arm(); !armed) return armed.error();
  run.armed_ns = monotonic_ns();
  if (callbacks.attached) callbacks.attached((*engine)->backend(), plan.sites.size());
  const auto started = std::chrono::steady_clock::now();
  RunLoopStops stops;
  stops.process = &target.process;
  stops.stop_fd = callbacks.cancel_fd >= 0 ? callbacks.cancel_fd : signals->fd();
  stops.stop_name = callbacks.cancel_fd >= 0 ? callbacks.cancel_reason : "interrupted";
  stops.duration_ms = request.duration_ms;
  stops.output_closed = callbacks.output_closed;
  stops.wake_fd = (*engine)->wake_fd();  // a --follow slot's write: re-arm now, not at the drain timer
  stops.drain_fd = callbacks.drain_fd;
  auto elapsed_ms = [&] {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  };
  RunLoopHooks hooks;
  // A release the engine cannot do ends the run.
  bool release_ends = false;
  auto release = [&](const WatchReleaseAsk& ask) {
    WatchReleaseDone done;
    done.sites = ask.sites;
    done.at_ms = elapsed_ms();
    const bool stopped_before = every_thread_stopped(target.process.pid());
    const uint64_t out_ns = monotonic_ns();
    if (!ask.sites.empty()) {
      if (auto out = (*engine)->release(ask.sites); !out) {
        done.error = out.error();
        release_ends = true;
      }
    }
    done.gap_us = (monotonic_ns() - out_ns) / 1000;
    done.process_stopped = stopped_before && every_thread_stopped(target.process.pid());
    if (!done.error) {
      run.released.push_back(done);
      run.released_reasons.push_back(ask.reason);
    }
    if (callbacks.released) callbacks.released(run, done);
  };
  hooks.drain_requested = [&]() -> Result<void> {
    if (callbacks.take_releases) {
      for (const WatchReleaseAsk& ask : callbacks.take_releases()) release(ask);
    }
    if (!callbacks.drained || (callbacks.drain_waiting && !callbacks.drain_waiting())) return {};
    // Everything the ring buffer holds, then the ranges re-read: the
    // process is stopped, so what it shows is all there is.
    while (true) {
      auto more = (*engine)->drain();
      if (!more) return more.error();
      watcher.settle();
      if (!*more) break;
    }
    watcher.check();
    run.elapsed_ms = elapsed_ms();
    run.counts = (*engine)->range_counts();
    run.stop = (*engine)->stop();
    callbacks.drained(run, (*engine)->until_hits_reached());
    return {};
  };
  hooks.woken = [&] { (*engine)->woken(); };
  hooks.drain = [&]() -> Result<bool> {
    auto more = (*engine)->drain();
    if (!more) return more;
    watcher.settle();
    // Re-read only when the ring buffer was empty: what it held is applied first.
    if (!*more) watcher.check();
    return more;
  };
  hooks.bound = [&]() -> std::optional<std::string> {
    if ((*engine)->until_hits_reached()) return std::string("until_hits");
    if (release_ends) return std::string("released");
    return std::nullopt;
  };
  auto ended = run_loop(stops, hooks);
  // The last look before the probes go: what changed since is not ours to see.
  if (ended && !ended->target_exited) {
    while (true) {
      auto more = (*engine)->drain();
      watcher.settle();
      if (!more || !*more) break;
    }
    // After an exec the addresses are another program's: nothing to compare.
    if (!ended->target_changed) watcher.check();
  }
  (*engine)->detach();
  run.elapsed_ms = elapsed_ms();
  if (!ended) return ended.error();
  run.stop_reason = ended->stop_reason;
  run.target_exited = ended->target_exited;
  run.target_changed = ended->target_changed;
  if (auto drained = (*engine)->drain(); !drained) return drained.error();
  watcher.settle();
  run.counts = (*engine)->range_counts();
  run.stacks = (*engine)->stack_counts();
  run.stop = (*engine)->stop();
  const std::vector<std::string> engine_warnings = (*engine)->warnings();
  run.warnings.insert(run.warnings.end(), engine_warnings.begin(), engine_warnings.end());
  for (uint32_t index = 0; index < plan.ranges.size(); ++index) {
    run.ranges[index].parked = plan.ranges[index].parked;
    run.ranges[index].address = plan.ranges[index].address;
  }
  return run;
}

}  // namespace xref
