#include "trace/bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "attach/libbpf_log.h"
#include "command/option_values.h"
#include "trace.skel.h"

namespace xref {
namespace {

xref_probe compile_probe(const PlannedProbe& planned) {
  xref_probe probe;
  std::memset(&probe, 0, sizeof probe);
  probe.static_va = planned.static_va;
  probe.function_id = planned.function_id;
  probe.kind = planned.kind;
  probe.flags = planned.flags;
  probe.return_function_id = planned.return_function_id;
  probe.frame_base = planned.frame_base;
  probe.frame_offset = planned.frame_offset;
  probe.next = planned.next < 0 ? XREF_PROBE_NO_NEXT : static_cast<uint32_t>(planned.next);
  probe.tail_target_id = planned.tail_target_id;
  if (planned.start) probe.flags |= XREF_PROBE_F_START;
  probe.fetch_count = static_cast<uint8_t>(planned.fetches.size());
  // :string fetches numbered into the probe's string slots, as the start
  // filter's string comparisons (filter_variables) name them.
  const std::vector<xref_fetch> compiled = compile_fetches(planned.fetches);
  for (size_t i = 0; i < compiled.size() && i < XREF_FETCH_MAX_ITEMS; ++i) probe.fetches[i] = compiled[i];
  return probe;
}

trace_bpf* open_configured(const TracePlan& plan, const TraceBpfOptions& options, bool uprobe_multi, Error& error) {
  trace_bpf* skeleton = trace_bpf__open();
  if (skeleton == nullptr) {
    error = make_error(ErrorCode::internal, "opening the embedded trace program failed: " + libbpf_message(-errno));
    return nullptr;
  }
  skeleton->rodata->target_tgid = static_cast<uint32_t>(options.pid);
  skeleton->rodata->max_events = options.max_events;
  skeleton->rodata->max_windows = options.max_windows;
  bpf_map__set_max_entries(skeleton->maps.events, static_cast<uint32_t>(options.ringbuf_bytes));
  if (uprobe_multi) {
    bpf_program__set_expected_attach_type(skeleton->progs.trace_probe,
                                          static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  }
  const int loaded = trace_bpf__load(skeleton);
  if (loaded != 0) {
    error = bpf_load_error(loaded, "the trace BPF program");
    trace_bpf__destroy(skeleton);
    return nullptr;
  }
  for (uint32_t index = 0; index < plan.probes.size(); ++index) {
    const xref_probe probe = compile_probe(plan.probes[index]);
    bpf_map__update_elem(skeleton->maps.probes, &index, sizeof index, &probe, sizeof probe, BPF_ANY);
  }
  if (plan.start_filter) {
    const xref_filter_program program = to_bpf_program(*plan.start_filter);
    const uint32_t zero = 0;
    bpf_map__update_elem(skeleton->maps.start_filter, &zero, sizeof zero, &program, sizeof program, BPF_ANY);
  }
  return skeleton;
}

}  // namespace

Result<std::unique_ptr<TraceBpf>> TraceBpf::start(const TracePlan& plan, const TraceBpfOptions& options) {
  if (auto ringbuf = check_ringbuf_bytes(options.ringbuf_bytes); !ringbuf) return ringbuf.error();
  // One link per file (and per direction): all of a module's probes go
  // through a single uprobe_multi link.
  std::vector<UprobeSet> sets(options.module_paths.size() * 2);
  for (size_t module = 0; module < options.module_paths.size(); ++module) {
    sets[2 * module].path = sets[2 * module + 1].path = options.module_paths[module];
    sets[2 * module + 1].return_probes = true;
  }
  for (size_t index = 0; index < plan.probes.size(); ++index) {
    const PlannedProbe& probe = plan.probes[index];
    if (!probe.head) continue;  // run through its head's chain
    bool start = false;
    plan.for_each_role(index, [&](size_t, const PlannedProbe& role) { start = start || role.start; });
    UprobeSet& set = sets[2 * probe.module_index + (probe.kind == XREF_PROBE_URETPROBE ? 1 : 0)];
    set.offsets.push_back(probe.file_offset);
    set.cookies.push_back(index | (start ? XREF_COOKIE_START : 0));
  }
  std::unique_ptr<TraceBpf> trace(new TraceBpf());
  auto backend = attach_uprobe_backend(options.backend, [&](bool uprobe_multi) -> Result<void> {
    Error error;
    trace->skeleton_ = open_configured(plan, options, uprobe_multi, error);
    if (trace->skeleton_ == nullptr) return error;
    auto link = attach_uprobe_sets(uprobe_multi, bpf_program__fd(trace->skeleton_->progs.trace_probe), options.pid, sets);
    if (!link) {
      trace_bpf__destroy(trace->skeleton_);
      trace->skeleton_ = nullptr;
      return link.error();
    }
    trace->link_ = std::move(*link);
    return {};
  });
  if (!backend) return backend.error();
  trace->backend_ = *backend;
  return trace;
}

TraceBpf::~TraceBpf() {
  link_.close();
  if (skeleton_ != nullptr) trace_bpf__destroy(skeleton_);
}

int TraceBpf::ringbuf_fd() const { return bpf_map__fd(skeleton_->maps.events); }

std::map<uint64_t, xref_window_result> TraceBpf::window_results() const {
  std::map<uint64_t, xref_window_result> results;
  const int fd = bpf_map__fd(skeleton_->maps.window_results);
  uint64_t key = 0, next = 0;
  const uint64_t* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    xref_window_result result;
    if (bpf_map_lookup_elem(fd, &next, &result) == 0) results[next] = result;
    key = next;
    previous = &key;
  }
  // The open windows: their state lives in the thread map.
  for (const auto& [tid, window] : thread_windows()) {
    xref_window_result result;
    std::memset(&result, 0, sizeof result);
    result.tid = tid;
    result.lost = window.lost;
    results[window.window_id] = result;
  }
  return results;
}

TraceCounters TraceBpf::counters() const {
  TraceCounters counters;
  const auto* bss = skeleton_->bss;
  counters.events_emitted = __atomic_load_n(&bss->events_emitted, __ATOMIC_RELAXED);
  counters.windows_opened = __atomic_load_n(&bss->windows_opened, __ATOMIC_RELAXED);
  counters.windows_closed = __atomic_load_n(&bss->windows_closed, __ATOMIC_RELAXED);
  counters.starts_filtered = __atomic_load_n(&bss->starts_filtered, __ATOMIC_RELAXED);
  counters.starts_refused = __atomic_load_n(&bss->starts_refused, __ATOMIC_RELAXED);
  counters.stopped = __atomic_load_n(&bss->stopped, __ATOMIC_RELAXED) != 0;
  counters.stop_reason = __atomic_load_n(&bss->stop_reason, __ATOMIC_RELAXED);
  // The per-CPU counters are the authority on loss; sum them.
  const int cpus = libbpf_num_possible_cpus();
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus > 0 ? cpus : 1));
  const uint32_t zero = 0;
  if (bpf_map__lookup_elem(skeleton_->maps.lost_per_cpu, &zero, sizeof zero, per_cpu.data(),
                           per_cpu.size() * sizeof(uint64_t), 0) == 0) {
    for (uint64_t lost : per_cpu) counters.lost_events += lost;
  } else {
    counters.lost_events = __atomic_load_n(&bss->lost_events, __ATOMIC_RELAXED);
  }
  counters.dropped_events = counters.lost_events;
  return counters;
}

void TraceBpf::detach() {
  if (skeleton_ != nullptr) __atomic_store_n(&skeleton_->bss->detaching, 1, __ATOMIC_SEQ_CST);
  link_.close();
}

void TraceBpf::arm() { __atomic_store_n(&skeleton_->bss->armed, 1, __ATOMIC_SEQ_CST); }

Result<uint64_t> TraceBpf::open_window(uint32_t tid, uint64_t entry_sp, uint32_t function_id, uint64_t start_ns) {
  auto* bss = skeleton_->bss;
  const uint64_t window_id = __atomic_add_fetch(&bss->windows_opened, 1, __ATOMIC_SEQ_CST);
  auto state = std::make_unique<xref_thread_window>();
  std::memset(state.get(), 0, sizeof *state);
  state->window_id = window_id;
  state->seq = 1;
  state->start_sp = entry_sp;
  state->depth = 1;
  state->frames[0].entry_sp = entry_sp;
  state->frames[0].function_id = function_id;
  state->frames[0].flags = XREF_FRAME_F_BY_RET;
  state->start_ns = start_ns;
  if (bpf_map__update_elem(skeleton_->maps.threads, &tid, sizeof tid, state.get(), sizeof *state, BPF_ANY) != 0) {
    return make_error(ErrorCode::internal, std::string("cannot open the --here window: ") + std::strerror(errno));
  }
  return window_id;
}

}  // namespace xref

namespace xref {

std::vector<std::pair<uint32_t, xref_thread_window>> TraceBpf::thread_windows() const {
  std::vector<std::pair<uint32_t, xref_thread_window>> windows;
  const int fd = bpf_map__fd(skeleton_->maps.threads);
  uint32_t key = 0, next = 0;
  const uint32_t* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    auto state = std::make_unique<xref_thread_window>();
    if (bpf_map_lookup_elem(fd, &next, state.get()) == 0) windows.emplace_back(next, *state);
    key = next;
    previous = &key;
  }
  return windows;
}

void TraceBpf::put_thread_window(uint32_t tid, const xref_thread_window& window) {
  bpf_map_update_elem(bpf_map__fd(skeleton_->maps.threads), &tid, &window, BPF_EXIST);
}

void TraceBpf::end_thread_window(uint32_t tid) {
  bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.threads), &tid);
  const uint64_t closed = __atomic_add_fetch(&skeleton_->bss->windows_closed, 1, __ATOMIC_SEQ_CST);
  // The bound the BPF program's close_window checks.
  const uint64_t max_windows = skeleton_->rodata->max_windows;
  if (max_windows != 0 && closed >= max_windows && __atomic_load_n(&skeleton_->bss->stopped, __ATOMIC_SEQ_CST) == 0) {
    __atomic_store_n(&skeleton_->bss->stop_reason, XREF_STOP_MAX_WINDOWS, __ATOMIC_SEQ_CST);
    __atomic_store_n(&skeleton_->bss->stopped, 1, __ATOMIC_SEQ_CST);
  }
}

}  // namespace xref
