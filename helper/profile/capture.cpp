#include "profile/capture.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "attach/libbpf_log.h"
#include "attach/ring_drain.h"
#include "attach/run_loop.h"
#include "monotonic_clock.h"
#include "profile/capture_modules.h"
#include "profile/stack_symbols.h"
#include "profile/target_threads.h"
#include "profile_abi.h"
#include "profile.skel.h"

namespace xref {
namespace {

// How often the run looks at the threads, the throttle rings and the
// program's counts of stacks that met no mapping (a dlopen: maps re-read).
constexpr uint64_t kLookNs = 250'000'000;
// /proc/PID/maps is re-read on this timer too (a dlopen whose code no
// sample has reached yet still belongs in the capture's modules).
constexpr uint64_t kMapsNs = 1'000'000'000;
// Rounds of listing the threads while opening their events: a thread
// started meanwhile may have missed inheriting one.
constexpr int kOpenRescans = 8;

constexpr uint32_t kCallersNone = 0;
constexpr uint32_t kCallersFp = 1;
constexpr uint32_t kCallersDwarf = 2;

uint64_t unix_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

struct SkeletonDeleter {
  void operator()(profile_bpf* skeleton) const { profile_bpf__destroy(skeleton); }
};

// The per-CPU `stats` summed.
std::vector<uint64_t> read_stats(bpf_map* stats) {
  std::vector<uint64_t> totals(XREF_PROFILE_STATS, 0);
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return totals;
  std::vector<uint64_t> values(static_cast<size_t>(cpus));
  for (uint32_t index = 0; index < XREF_PROFILE_STATS; ++index) {
    if (bpf_map__lookup_elem(stats, &index, sizeof index, values.data(), values.size() * sizeof(uint64_t), 0) != 0) {
      continue;
    }
    for (uint64_t value : values) totals[index] += value;
  }
  return totals;
}

// Every entry of a hash map, `batch` at a time with BPF_MAP_LOOKUP_BATCH
// (one call per batch instead of two per entry: at 999 Hz the maps hold
// thousands of stacks); key by key where the kernel has no batch lookup.
template <typename Key, typename Value, typename Take>
void read_hash_map(int fd, uint32_t batch, Take take) {
  std::vector<Key> keys(batch);
  std::vector<Value> values(batch);
  Key in_token{}, out_token{};
  bool first = true;
  while (true) {
    uint32_t count = batch;
    const int read = bpf_map_lookup_batch(fd, first ? nullptr : &in_token, &out_token, keys.data(), values.data(),
                                          &count, nullptr);
    const int error = read == 0 ? 0 : errno;
    if (read != 0 && error == ENOSPC && count == 0 && batch < (1u << 20)) {
      batch *= 2;  // one bucket holds more than a batch
      keys.resize(batch);
      values.resize(batch);
      continue;
    }
    if (read != 0 && error != ENOENT) {
      if (!first) return;  // what came is kept
      Key key{}, next{};
      const Key* previous = nullptr;
      auto value = std::make_unique<Value>();
      while (bpf_map_get_next_key(fd, previous, &next) == 0) {
        if (bpf_map_lookup_elem(fd, &next, value.get()) == 0) take(next, *value);
        key = next;
        previous = &key;
      }
      return;
    }
    for (uint32_t at = 0; at < count; ++at) take(keys[at], values[at]);
    if (read != 0) return;  // ENOENT: the last batch
    in_token = out_token;
    first = false;
  }
}

std::map<uint64_t, RawStack> read_stacks(bpf_map* map) {
  std::map<uint64_t, RawStack> stacks;
  read_hash_map<uint64_t, xref_profile_stack>(bpf_map__fd(map), 512, [&](uint64_t id, const xref_profile_stack& value) {
    RawStack raw;
    const uint16_t depth = std::min<uint16_t>(value.depth, XREF_PROFILE_MAX_FRAMES);
    raw.pcs.assign(value.pcs, value.pcs + depth);
    raw.end = value.end;
    raw.in_kernel = (value.flags & XREF_STACK_IN_KERNEL) != 0;
    stacks.emplace(id, std::move(raw));
  });
  return stacks;
}

std::map<std::pair<uint64_t, uint32_t>, uint64_t> read_counts(bpf_map* map) {
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> counts;
  read_hash_map<xref_profile_count_key, uint64_t>(
      bpf_map__fd(map), 4096,
      [&](const xref_profile_count_key& key, uint64_t count) { counts[{key.stack_id, key.tid}] += count; });
  return counts;
}

uint32_t callers_code(const std::string& callers) {
  if (callers == "none") return kCallersNone;
  if (callers == "fp") return kCallersFp;
  return kCallersDwarf;
}

class CaptureRun {
 public:
  CaptureRun(Target& target, const ProfileRequest& request, const SamplingEvent& event)
      : target_(target),
        request_(request),
        pid_(target.process.pid()),
        modules_(target.process.pid(), request.callers == "dwarf"),
        threads_(target.process.pid()),
        events_(event, request.frequency_hz) {}

  Result<void> load();
  Result<void> open_events();
  Result<RunLoopEnd> run(const CaptureCallbacks& callbacks);
  Capture finish(const SamplingEvent& event, const RunLoopEnd& ended);

 private:
  void look(bool final_look);

  Target& target_;
  const ProfileRequest& request_;
  pid_t pid_;
  CaptureModules modules_;
  TargetThreads threads_;
  SamplingEvents events_;
  std::unique_ptr<profile_bpf, SkeletonDeleter> skeleton_;
  std::unique_ptr<RingDrain> ring_;
  std::vector<std::string> warnings_;
  uint32_t rows_capacity_ = 0;
  uint64_t throttled_ = 0;
  uint64_t no_mapping_seen_ = 0;
  uint64_t last_maps_ns_ = 0;
  uint64_t started_ns_ = 0;
  uint64_t started_unix_ns_ = 0;
  uint64_t ended_ns_ = 0;
};

Result<void> CaptureRun::load() {
  if (auto read = modules_.refresh(); !read) return read.error();
  configure_libbpf_logging();
  skeleton_.reset(profile_bpf__open());
  if (!skeleton_) {
    return make_error(ErrorCode::internal, "opening the embedded profile program failed: " + libbpf_message(-errno));
  }
  skeleton_->rodata->target_tgid = static_cast<uint32_t>(pid_);
  skeleton_->rodata->callers = callers_code(request_.callers);
  // The rows' array is allocated whole at load: sized from the modules' CFI
  // for dwarf, one row otherwise.
  rows_capacity_ = request_.callers == "dwarf" ? modules_.estimated_rows() : 1;
  bpf_map__set_max_entries(skeleton_->maps.unwind_rows, rows_capacity_);
  if (const int loaded = profile_bpf__load(skeleton_.get()); loaded != 0) {
    return bpf_load_error(loaded, "the profile program");
  }
  modules_.bind(skeleton_->maps.unwind_rows, skeleton_->maps.mappings, rows_capacity_);
  if (request_.callers == "dwarf") modules_.load_eager_tables();
  auto ring = RingDrain::open(bpf_map__fd(skeleton_->maps.requests), [this](const void* data, size_t size) {
    if (size < sizeof(xref_profile_request)) return;
    xref_profile_request request;
    std::memcpy(&request, data, sizeof request);
    modules_.on_request(request);
  });
  if (!ring) return ring.error();
  ring_ = std::move(*ring);
  return {};
}

// One event per thread /proc/PID/task lists (or per --threads), then again
// for the threads that appeared meanwhile, until a listing brings none.
Result<void> CaptureRun::open_events() {
  std::set<uint32_t> opened;
  std::set<uint32_t> wanted(request_.threads.begin(), request_.threads.end());
  if (!wanted.empty()) {
    const std::vector<uint32_t> present = list_thread_ids(pid_);
    for (uint32_t tid : wanted) {
      if (std::find(present.begin(), present.end(), tid) == present.end()) {
        return make_error(ErrorCode::invalid_argument,
                          "--threads " + std::to_string(tid) + " is not a thread of PID " + std::to_string(pid_),
                          "list the threads with `ls /proc/" + std::to_string(pid_) + "/task`");
      }
    }
  }
  for (int round = 0; round < kOpenRescans; ++round) {
    bool new_threads = false;
    for (uint32_t tid : list_thread_ids(pid_)) {
      if (opened.count(tid) || (!wanted.empty() && !wanted.count(tid))) continue;
      new_threads = true;
      auto open = events_.open(tid, skeleton_->progs.profile_sample);
      if (!open) return open.error();
      if (!*open) continue;
      if (round > 0) {
        warnings_.push_back("thread " + std::to_string(tid) +
                            " started while xref opened the others' events: it may hold an inherited event "
                            "besides its own, and then counts twice");
      }
      opened.insert(tid);
    }
    if (!new_threads) break;
  }
  if (events_.size() == 0) {
    return make_error(ErrorCode::process_exited, "PID " + std::to_string(pid_) + " has no thread left to sample",
                      "start the program again and give its new PID");
  }
  threads_.look(false);
  return {};
}

void CaptureRun::look(bool final_look) {
  const uint64_t now = monotonic_ns();
  throttled_ += events_.take_throttles();
  threads_.look(true);
  if (request_.callers != "dwarf" && !final_look) return;
  const std::vector<uint64_t> stats = read_stats(skeleton_->maps.stats);
  const uint64_t no_mapping = stats[XREF_PROFILE_STAT_END_BASE + XREF_STACK_NO_MAPPING];
  if (no_mapping != no_mapping_seen_ || now - last_maps_ns_ >= kMapsNs || final_look) {
    no_mapping_seen_ = no_mapping;
    last_maps_ns_ = now;
    (void)modules_.refresh();
  }
}

Result<RunLoopEnd> CaptureRun::run(const CaptureCallbacks& callbacks) {
  events_.enable_all();
  started_ns_ = monotonic_ns();
  started_unix_ns_ = unix_ns();
  last_maps_ns_ = started_ns_;
  if (callbacks.attached) callbacks.attached(events_.size());
  RunLoopStops stops;
  stops.process = &target_.process;
  stops.stop_fd = callbacks.cancel_fd;
  stops.stop_name = callbacks.cancel_reason;
  stops.drain_fd = callbacks.drain_fd;
  stops.duration_ms = request_.duration_ms;
  stops.wake_fd = ring_->wake_fd();
  // The samples stay in the maps and a table request wakes the loop: it
  // has nothing to do between the looks at the threads and mappings.
  stops.drain_interval_ms = kLookNs / 1'000'000;
  uint64_t last_look = started_ns_;
  RunLoopHooks hooks;
  hooks.drain = [&]() -> Result<bool> { return ring_->round(); };
  hooks.woken = [&] { ring_->clear_wake(); };
  // The front end's drain: the capture's samples stay in the maps until
  // the end; the answer may end the capture (the debugger stopped).
  std::optional<std::string> ending;
  hooks.drain_requested = [&]() -> Result<void> {
    if (callbacks.drained && !ending) ending = callbacks.drained();
    return {};
  };
  hooks.bound = [&] { return ending; };
  hooks.tick = [&] {
    if (monotonic_ns() - last_look < kLookNs) return;
    last_look = monotonic_ns();
    look(false);
  };
  auto ended = run_loop(stops, hooks);
  events_.disable_all();
  ended_ns_ = monotonic_ns();
  return ended;
}

Capture CaptureRun::finish(const SamplingEvent& event, const RunLoopEnd& ended) {
  Capture capture;
  ring_->unbound();
  while (ring_->round()) {
  }
  if (!ended.target_exited) look(true);
  throttled_ += events_.take_throttles();
  Profile& profile = capture.profile;
  profile.process = process_json_after(target_);
  ProfileCaptureParameters& parameters = profile.capture;
  parameters.event = event.name;
  parameters.event_reason = event.reason;
  parameters.frequency_hz = request_.frequency_hz;
  parameters.period_ns = event.clock ? 1000000000ull / request_.frequency_hz : 0;
  parameters.callers = request_.callers;
  parameters.max_frames = XREF_PROFILE_MAX_FRAMES;
  parameters.started_unix_ns = started_unix_ns_;
  parameters.duration_ns = ended_ns_ - started_ns_;
  parameters.threads_requested = request_.threads;
  parameters.ended_by = ended.target_changed ? "process_changed" : ended.stop_reason;
  capture.target_changed = ended.target_changed;

  const std::vector<uint64_t> stats = read_stats(skeleton_->maps.stats);
  profile.losses.throttled = throttled_;
  profile.losses.stacks_full = stats[XREF_PROFILE_STAT_STACKS_FULL];
  profile.losses.counts_full = stats[XREF_PROFILE_STAT_COUNTS_FULL];
  profile.losses.requests_lost = stats[XREF_PROFILE_STAT_REQUESTS_LOST];
  profile.losses.other_process = stats[XREF_PROFILE_STAT_OTHER_PROCESS];
  profile.frames_walked = stats[XREF_PROFILE_STAT_FRAMES];
  for (uint8_t end = 1; end < XREF_STACK_END_REASONS; ++end) {
    const uint64_t samples = stats[XREF_PROFILE_STAT_END_BASE + end];
    if (samples != 0) profile.stack_ends[stack_end_name(stack_end_of(end))] += samples;
  }
  const EventCount count = events_.total();
  capture.event_count = count.value;
  capture.lost_records = events_.lost_records();
  capture.events_opened = events_.size();

  fill_profile_stacks(profile, modules_, read_stacks(skeleton_->maps.stacks), read_counts(skeleton_->maps.counts));
  events_.close_all();

  for (const CaptureModule& module : modules_.modules()) profile.modules.push_back(module.profile);
  // A module no sample reached needs no table: say so instead of "loaded".
  std::map<uint32_t, uint64_t> thread_samples;
  for (const ProfileSample& sample : profile.samples) thread_samples[sample.tid] += sample.count;
  for (const auto& [tid, followed] : threads_.threads()) {
    ProfileThread thread;
    thread.tid = tid;
    thread.name = followed.name;
    thread.samples = thread_samples.count(tid) ? thread_samples[tid] : 0;
    thread.cpu_ns = followed.cpu_ns_last - std::min(followed.cpu_ns_last, followed.cpu_ns_at_start);
    thread.started_during_capture = followed.started_during_capture;
    thread.exited_during_capture = followed.exited_during_capture || ended.target_exited;
    profile.threads.push_back(thread);
  }
  // Threads that took samples between two looks of /proc (short-lived).
  for (const auto& [tid, samples] : thread_samples) {
    if (threads_.threads().count(tid)) continue;
    ProfileThread thread;
    thread.tid = tid;
    thread.samples = samples;
    thread.started_during_capture = true;
    thread.exited_during_capture = true;
    profile.threads.push_back(thread);
  }
  profile.warnings = warnings_;
  if (stats[XREF_PROFILE_STAT_SAMPLES] != profile.total_samples() + profile.losses.stacks_full +
                                               profile.losses.counts_full) {
    profile.warnings.push_back("the program counted " + std::to_string(stats[XREF_PROFILE_STAT_SAMPLES]) +
                               " samples and the maps hold " + std::to_string(profile.total_samples()));
  }
  capture.tables_compiled = modules_.tables_compiled();
  capture.table_rows_capacity = rows_capacity_;
  capture.table_rows_used = modules_.rows_used();
  return capture;
}

}  // namespace

Result<Capture> run_capture(Target& target, const ProfileRequest& request, const SamplingEvent& event,
                            const CaptureCallbacks& callbacks) {
  CaptureRun run(target, request, event);
  if (auto loaded = run.load(); !loaded) return loaded.error();
  if (auto opened = run.open_events(); !opened) return opened.error();
  auto ended = run.run(callbacks);
  if (!ended) return ended.error();
  return run.finish(event, *ended);
}

}  // namespace xref
