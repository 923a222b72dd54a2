#include "watch/stores_engine.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "attach/libbpf_log.h"
#include "attach/ring_drain.h"
#include "attach/uprobe_attach.h"
#include "watch/detail.h"
#include "watch/process_memory.h"
#include "watch/watch_records.h"
#include "probe_abi.h"
#include "watch/stop_when.h"
#include "watch_stores.skel.h"

namespace xref {
namespace {

constexpr uint64_t kRingBytes = 4u << 20;

// The BPF copy of the in-flight map's value (bpf/watch_stores.bpf.c):
// the parts of one write, and what its hit fetched (struct hit_detail of
// bpf/watch_detail.bpf.h, whose values are fetch_filter.bpf.h's struct
// fetched).
struct HitDetail {
  __u64 values[XREF_FETCH_MAX_ITEMS];
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  __u16 failed;
  __u8 count;
  __u8 string_count;
  __u32 reserved;
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
  __u64 regs[XREF_WATCH_REG_WORDS];
  __u64 caller;
  __s64 stack_id;
};
static_assert(sizeof(HitDetail) == 1408, "struct hit_detail of bpf/watch_detail.bpf.h");

struct InFlight {
  uint32_t count;
  uint32_t reserved;
  xref_watch_record parts[4];
  HitDetail detail;
};

xref_watch_range bpf_range(const WatchRange& range, bool changed) {
  xref_watch_range out{};
  out.address = range.address;
  out.length = range.parked ? 0 : range.length;
  out.changed_only = changed ? 1 : 0;
  out.wake = range.is_slot ? 1 : 0;
  return out;
}

class StoresWatchEngine : public WatchEngine {
 public:
  StoresWatchEngine(const WatchPlan& plan, const WatchRequest& request, WatchRecordSink sink)
      : plan_(plan), request_(request), sink_(std::move(sink)) {}
  ~StoresWatchEngine() override {
    link_.close();
    ring_.reset();
    if (skeleton_ != nullptr) watch_stores_bpf__destroy(skeleton_);
  }

  Result<void> start() {
    std::vector<UprobeSet> sets(plan_.modules.size());
    for (size_t module = 0; module < sets.size(); ++module) sets[module].path = plan_.modules[module].open_path;
    for (size_t index = 0; index < plan_.sites.size(); ++index) {
      UprobeSet& set = sets[plan_.sites[index].module];
      set.offsets.push_back(plan_.sites[index].file_offset);
      set.cookies.push_back(index);
    }
    sets.erase(std::remove_if(sets.begin(), sets.end(), [](const UprobeSet& set) { return set.offsets.empty(); }),
               sets.end());
    auto backend = attach_uprobe_backend("auto", [&](bool uprobe_multi) -> Result<void> {
      if (auto loaded = load(uprobe_multi); !loaded) return loaded;
      multi_ = uprobe_multi;
      auto link = attach_uprobe_sets(uprobe_multi, bpf_program__fd(skeleton_->progs.watch_store), plan_.pid, sets);
      if (!link) {
        watch_stores_bpf__destroy(skeleton_);
        skeleton_ = nullptr;
        return link.error();
      }
      link_ = std::move(*link);
      return {};
    });
    if (!backend) return backend.error();
    attach_backend_ = *backend;
    sets_ = std::move(sets);
    auto ring = RingDrain::open(bpf_map__fd(skeleton_->maps.records), [this](const void* data, size_t size) {
      if (size < sizeof(xref_watch_record)) return;
      xref_watch_record raw;
      std::memcpy(&raw, data, sizeof raw);
      WatchRecord record = decode_watch_record(raw);
      decode_watch_detail(data, size, plan_, skeleton_->maps.stack_traces, record);
      sink_(std::move(record));
    });
    if (!ring) return ring.error();
    ring_ = std::move(*ring);
    return {};
  }

  const std::string& backend() const override { return name_; }
  Result<void> arm() override {
    __atomic_store_n(&skeleton_->bss->armed, 1, __ATOMIC_SEQ_CST);
    return {};
  }
  Result<bool> drain() override { return ring_->round(); }
  int wake_fd() override { return ring_->wake_fd(); }
  void woken() override { ring_->clear_wake(); }

  Result<void> move_range(uint32_t range, uint64_t address) override {
    if (range >= plan_.ranges.size()) return make_error(ErrorCode::internal, "no watched range " + std::to_string(range));
    xref_watch_range value{};
    if (bpf_map__lookup_elem(skeleton_->maps.ranges, &range, sizeof range, &value, sizeof value, 0) != 0) {
      return make_error(ErrorCode::internal, "reading watched range " + std::to_string(range) + " failed");
    }
    value.address = address;
    value.length = address == 0 ? 0 : plan_.ranges[range].length;  // 0: parked
    value.generation += 1;
    if (bpf_map__update_elem(skeleton_->maps.ranges, &range, sizeof range, &value, sizeof value, BPF_ANY) != 0) {
      return make_error(ErrorCode::internal, "moving watched range " + std::to_string(range) + " failed");
    }
    return {};
  }

  // The module's link is replaced by one without the sites: out first, as
  // the kernel restores a site's byte only where it finds its int3.
  Result<void> release(const std::vector<uint32_t>& sites) override {
    for (UprobeSet& set : sets_) {
      for (size_t at = set.cookies.size(); at-- > 0;) {
        if (std::find(sites.begin(), sites.end(), set.cookies[at]) == sites.end()) continue;
        set.cookies.erase(set.cookies.begin() + static_cast<ptrdiff_t>(at));
        set.offsets.erase(set.offsets.begin() + static_cast<ptrdiff_t>(at));
      }
    }
    sets_.erase(std::remove_if(sets_.begin(), sets_.end(), [](const UprobeSet& set) { return set.offsets.empty(); }),
                sets_.end());
    link_.close();
    if (sets_.empty()) return {};
    auto link = attach_uprobe_sets(multi_, bpf_program__fd(skeleton_->progs.watch_store), plan_.pid, sets_);
    if (!link) return link.error();
    link_ = std::move(*link);
    return {};
  }

  std::optional<WatchStop> stop() const override {
    return skeleton_ == nullptr ? std::nullopt : read_watch_stop(skeleton_->bss->stop_info);
  }

  bool until_hits_reached() const override {
    return __atomic_load_n(&skeleton_->bss->stopped, __ATOMIC_RELAXED) != 0;
  }

  void detach() override {
    if (skeleton_ == nullptr || detached_) return;
    detached_ = true;
    __atomic_store_n(&skeleton_->bss->detaching, 1, __ATOMIC_SEQ_CST);
    link_.close();
    ring_->unbound();
    ring_->round();  // what came before the detach, in order, before the writes still in flight
    finish_in_flight();
  }

  std::vector<WatchRangeCounts> range_counts() const override {
    std::vector<WatchRangeCounts> totals = sum_range_counts(skeleton_->maps.counts, plan_.ranges.size());
    // Writes finished here at the end were counted by the program at their
    // store; their records are ours.
    for (const auto& [range, records] : finished_here_) totals[range].records += records;
    for (const auto& [range, passed] : passed_here_) totals[range].passed += passed;
    for (const auto& [range, unfiltered] : unfiltered_here_) totals[range].unfiltered += unfiltered;
    return totals;
  }

  std::vector<WatchStackCount> stack_counts() const override {
    if (!request_.callers) return {};
    return read_watch_stacks(skeleton_->maps.stacks, skeleton_->maps.stack_traces);
  }

  std::vector<uint32_t> ranges_in_flight() const override {
    std::vector<uint32_t> ranges;
    for (const InFlight& flight : in_flight()) {
      for (uint32_t part = 0; part < std::min<uint32_t>(flight.count, 4); ++part) ranges.push_back(flight.parts[part].range);
    }
    return ranges;
  }

  std::vector<std::string> warnings() const override {
    std::vector<std::string> out;
    if (attach_backend_ == "perf_uprobe") out.push_back("attach: uprobe_multi is not available: one perf uprobe per site");
    if (finished_at_end_ > 0) {
      out.push_back("new_read_at_end: " + std::to_string(finished_at_end_) +
                    " writes were still in flight at the end (no later probe of their thread): their new bytes were "
                    "read then");
    }
    return out;
  }

 private:
  Result<void> load(bool uprobe_multi) {
    skeleton_ = watch_stores_bpf__open();
    if (skeleton_ == nullptr) {
      return make_error(ErrorCode::internal, "opening the embedded watch program failed: " + libbpf_message(-errno));
    }
    skeleton_->rodata->target_tgid = static_cast<uint32_t>(plan_.pid);
    skeleton_->rodata->max_records = request_.max_events;
    skeleton_->rodata->first = request_.first;
    skeleton_->rodata->every = request_.every == 0 ? 1 : request_.every;
    skeleton_->rodata->until_hits = request_.until_hits;
    skeleton_->rodata->stop_signal = plan_.stop_filter ? XREF_PROBE_STOP_SIGNAL : 0;
    skeleton_->rodata->stop_skip = request_.stop_skip;
    bpf_map__set_max_entries(skeleton_->maps.sites, static_cast<uint32_t>(std::max<size_t>(plan_.sites.size(), 1)));
    bpf_map__set_max_entries(skeleton_->maps.records, kRingBytes);
    bpf_map__set_max_entries(skeleton_->maps.site_callers,
                             static_cast<uint32_t>(std::max<size_t>(plan_.sites.size(), 1)));
    set_watch_detail_switches(*skeleton_->rodata, plan_, request_);
    size_watch_stack_map(skeleton_->maps.stack_traces, request_.callers);
    if (uprobe_multi) {
      bpf_program__set_expected_attach_type(skeleton_->progs.watch_store,
                                            static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
    }
    if (const int loaded = watch_stores_bpf__load(skeleton_); loaded != 0) {
      Error error = bpf_load_error(loaded, "the watch stores BPF program");
      watch_stores_bpf__destroy(skeleton_);
      skeleton_ = nullptr;
      return error;
    }
    for (uint32_t index = 0; index < plan_.sites.size(); ++index) {
      bpf_map__update_elem(skeleton_->maps.sites, &index, sizeof index, &plan_.sites[index].operand,
                           sizeof(xref_watch_site), BPF_ANY);
    }
    for (uint32_t index = 0; index < plan_.ranges.size(); ++index) {
      const xref_watch_range value = bpf_range(plan_.ranges[index], request_.changed);
      bpf_map__update_elem(skeleton_->maps.ranges, &index, sizeof index, &value, sizeof value, BPF_ANY);
    }
    for (uint32_t index = 0; index < plan_.site_callers.size(); ++index) {
      bpf_map__update_elem(skeleton_->maps.site_callers, &index, sizeof index, &plan_.site_callers[index],
                           sizeof(xref_watch_site_caller), BPF_ANY);
    }
    skeleton_->bss->range_count = static_cast<uint32_t>(plan_.ranges.size());
    if (bpf_map__value_size(skeleton_->maps.writes_in_flight) != sizeof(InFlight)) {
      return make_error(ErrorCode::internal, "the watch program's in-flight writes are not laid out as the helper's");
    }
    if (auto stop = fill_watch_stop_map(plan_, skeleton_->maps.stop_filter); !stop) return stop.error();
    return fill_watch_detail_maps(plan_, skeleton_->maps.fetches, skeleton_->maps.filter);
  }

  std::vector<InFlight> in_flight() const {
    const int fd = bpf_map__fd(skeleton_->maps.writes_in_flight);
    uint32_t key = 0, next = 0;
    const uint32_t* previous = nullptr;
    std::vector<InFlight> flights;
    while (bpf_map_get_next_key(fd, previous, &next) == 0) {
      InFlight flight{};
      if (bpf_map_lookup_elem(fd, &next, &flight) == 0) flights.push_back(flight);
      key = next;
      previous = &key;
    }
    return flights;
  }

  // The writes whose thread hit no probe after them: their new bytes now.
  void finish_in_flight() {
    for (const InFlight& flight : in_flight()) {
      for (uint32_t part = 0; part < std::min<uint32_t>(flight.count, 4); ++part) {
        WatchRecord record = decode_watch_record(flight.parts[part]);
        record.flags |= XREF_WATCH_R_NEW_AFTER;
        auto bytes = read_target_bytes(plan_.pid, record.address, record.new_bytes.size());
        if (bytes) {
          record.new_bytes = *bytes;
        } else {
          record.flags |= XREF_WATCH_R_NEW_UNREAD;
        }
        if (request_.callers || request_.regs || !plan_.fetches.empty() || plan_.filter) {
          add_detail(flight.detail, record);
        }
        const std::optional<bool> passes = passes_filter(record);
        if (!passes) ++unfiltered_here_[record.range];
        if (!passes || !*passes) continue;
        record.sequence = __atomic_add_fetch(&skeleton_->bss->sequence, 1, __ATOMIC_SEQ_CST);
        ++finished_at_end_;
        ++finished_here_[record.range];
        ++passed_here_[record.range];
        sink_(std::move(record));
      }
    }
  }

  // What the hit of a write finished here fetched (as decode_watch_detail).
  void add_detail(const HitDetail& detail, WatchRecord& record) const {
    record.has_detail = true;
    record.fetches = fetched_values(plan_.fetches, std::min<size_t>(detail.count, plan_.fetches.size()), detail.failed,
                                    detail.values, detail.errors, &detail.strings[0][0]);
    if (request_.regs) record.regs.assign(detail.regs, detail.regs + XREF_WATCH_REG_WORDS);
    record.caller = detail.caller;
    if (request_.callers) {
      record.stack = watch_stack_frames(walked_stack(skeleton_->maps.stack_traces, detail.stack_id), detail.caller);
    }
  }

  // --filter over a write finished here, as the program runs it: on the new
  // bytes read now, the range's `value` and `old` from them. nullopt: a
  // value was not read (any of them, not only those the filter reads).
  std::optional<bool> passes_filter(const WatchRecord& record) const {
    if (!plan_.filter || plan_.filter->instructions.empty()) return true;
    std::vector<uint64_t> values(XREF_FETCH_MAX_ITEMS, 0);
    std::vector<std::string> strings(XREF_FETCH_MAX_STRINGS);
    const std::vector<int> string_slots = fetch_string_slots(plan_.fetches);
    for (size_t at = 0; at < record.fetches.size(); ++at) {
      if (!record.fetches[at].value) return std::nullopt;
      values[at] = *record.fetches[at].value;
      if (string_slots[at] >= 0) strings[static_cast<size_t>(string_slots[at])] = record.fetches[at].text;
    }
    const WatchRange& range = plan_.ranges[record.range];
    const size_t offset = record.address - range.address;
    auto now = read_target_bytes(plan_.pid, range.address, range.length);
    if (!now || offset + record.new_bytes.size() > now->size() || (record.flags & XREF_WATCH_R_OLD_UNREAD)) {
      return std::nullopt;
    }
    std::vector<uint8_t> old_bytes = *now;
    std::copy(record.old_bytes.begin(), record.old_bytes.end(), old_bytes.begin() + static_cast<long>(offset));
    uint64_t value = 0, old = 0;
    std::memcpy(&value, now->data(), std::min<size_t>(now->size(), 8));
    std::memcpy(&old, old_bytes.data(), std::min<size_t>(old_bytes.size(), 8));
    values[plan_.fetches.size()] = value;
    values[plan_.fetches.size() + 1] = old;
    return evaluate_program(*plan_.filter, values, strings);
  }

  const WatchPlan& plan_;
  const WatchRequest& request_;
  WatchRecordSink sink_;
  watch_stores_bpf* skeleton_ = nullptr;
  UprobeLink link_;
  std::vector<UprobeSet> sets_;  // what link_ holds (session.release takes sites out)
  bool multi_ = true;
  std::unique_ptr<RingDrain> ring_;
  std::string name_ = "stores";
  std::string attach_backend_;
  bool detached_ = false;
  uint64_t finished_at_end_ = 0;
  std::map<uint32_t, uint64_t> finished_here_;
  std::map<uint32_t, uint64_t> passed_here_;
  std::map<uint32_t, uint64_t> unfiltered_here_;
};

}  // namespace

Result<std::unique_ptr<WatchEngine>> start_stores_watch_engine(const WatchPlan& plan, const WatchRequest& request,
                                                               WatchRecordSink sink) {
  auto engine = std::make_unique<StoresWatchEngine>(plan, request, std::move(sink));
  if (auto started = engine->start(); !started) return started.error();
  return std::unique_ptr<WatchEngine>(std::move(engine));
}

}  // namespace xref
