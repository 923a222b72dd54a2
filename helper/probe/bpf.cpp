#include "probe/bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attach/fetched_value.h"
#include "attach/libbpf_log.h"
#include "command/option_values.h"
#include "probe.skel.h"

namespace xref {
namespace {

// A probe that fetches, filters, groups and stops on nothing runs the
// count-only program: cheaper per hit, and verified in a fraction of the
// time (most of an attach's fixed cost).
bool counts_only(const ProbePlan& plan) {
  return plan.fetches.empty() && !plan.filter && !plan.stop_filter && plan.group_by.empty() && plan.hist.empty() &&
         plan.stacks == 0;
}

// The ring needs no more room than every record the probe can ever emit
// (--first samples a site at most that often; --max-events bounds them
// all): then it gets that, rounded up to a power of two and a page, and
// never more than asked for. Its pages are the kernel's, mapped into the
// helper twice over; a probe of a few sites with the default --first 8
// holds a page, not 1 MiB (docs/performance.md, "xref serve's memory").
uint64_t ring_bytes_needed(const ProbePlan& plan, const ProbeBpfOptions& options) {
  uint64_t records = options.first > 0 ? options.first * plan.sites.size() : 0;
  if (options.max_records > 0 && (records == 0 || options.max_records < records)) records = options.max_records;
  if (records == 0) return options.ringbuf_bytes;
  // Each record carries the ring's 8-byte header, 8-byte aligned.
  const uint64_t slot = (sizeof(xref_probe_record) + 8 + 7) / 8 * 8;
  uint64_t bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  while (bytes < records * slot && bytes < options.ringbuf_bytes) bytes *= 2;
  return std::min(bytes, options.ringbuf_bytes);
}

bpf_program* hit_program(probe_bpf* skeleton, const ProbePlan& plan) {
  return counts_only(plan) ? skeleton->progs.probe_count : skeleton->progs.probe_hit;
}

probe_bpf* open_configured(const ProbePlan& plan, const ProbeBpfOptions& options, bool uprobe_multi, Error& error) {
  probe_bpf* skeleton = probe_bpf__open();
  if (skeleton == nullptr) {
    error = make_error(ErrorCode::internal, "opening the embedded probe program failed: " + libbpf_message(-errno));
    return nullptr;
  }
  skeleton->rodata->target_tgid = static_cast<uint32_t>(options.pid);
  skeleton->rodata->max_records = options.max_records;
  skeleton->rodata->first = options.first;
  skeleton->rodata->every = options.every == 0 ? 1 : options.every;
  skeleton->rodata->until_hits = options.until_hits;
  skeleton->rodata->stop_signal = plan.stop_filter ? static_cast<uint32_t>(options.stop_signal) : 0;
  skeleton->rodata->stop_skip = options.stop_skip;
  bpf_map__set_max_entries(skeleton->maps.records, static_cast<uint32_t>(ring_bytes_needed(plan, options)));
  // The stack map is preallocated (entries x depth x 8 bytes): its full
  // size only with --stacks.
  const uint32_t depth = options.stack_depth == 0 ? 1 : options.stack_depth;
  bpf_map__set_value_size(skeleton->maps.stack_traces, depth * sizeof(uint64_t));
  if (options.stack_depth == 0) {
    bpf_map__set_max_entries(skeleton->maps.stack_traces, 1);
    bpf_map__set_max_entries(skeleton->maps.stacks, 1);
  }
  bpf_program* hit = hit_program(skeleton, plan);
  bpf_program__set_autoload(hit == skeleton->progs.probe_hit ? skeleton->progs.probe_count : skeleton->progs.probe_hit,
                            false);
  if (uprobe_multi) bpf_program__set_expected_attach_type(hit, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  // Maps a probe does not use get one entry.
  bool callers = false;
  for (const ProbeSite& site : plan.sites) callers |= site.compiled.caller != XREF_CALLER_NONE;
  if (!callers) bpf_map__set_max_entries(skeleton->maps.callers, 1);
  if (plan.group_by.empty() || plan.group_string_bound != 0) bpf_map__set_max_entries(skeleton->maps.groups, 1);
  if (plan.group_string_bound == 0) bpf_map__set_max_entries(skeleton->maps.string_groups, 1);
  const int loaded = probe_bpf__load(skeleton);
  if (loaded != 0) {
    error = bpf_load_error(loaded, "the probe BPF program");
    probe_bpf__destroy(skeleton);
    return nullptr;
  }
  for (uint32_t index = 0; index < plan.sites.size(); ++index) {
    bpf_map__update_elem(skeleton->maps.sites, &index, sizeof index, &plan.sites[index].compiled,
                         sizeof(xref_probe_site), BPF_ANY);
  }
  if (plan.filter) {
    const xref_filter_program program = to_bpf_program(*plan.filter);
    const uint32_t zero = 0;
    bpf_map__update_elem(skeleton->maps.filter, &zero, sizeof zero, &program, sizeof program, BPF_ANY);
  }
  if (plan.stop_filter) {
    const xref_filter_program program = to_bpf_program(*plan.stop_filter);
    const uint32_t zero = 0;
    bpf_map__update_elem(skeleton->maps.stop_filter, &zero, sizeof zero, &program, sizeof program, BPF_ANY);
  }
  return skeleton;
}

// Every (site, value) -> count of a hash map.
std::map<uint32_t, std::map<uint64_t, uint64_t>> read_keyed(const bpf_map* map) {
  std::map<uint32_t, std::map<uint64_t, uint64_t>> all;
  const int fd = bpf_map__fd(map);
  xref_probe_key key{}, next{};
  const xref_probe_key* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    uint64_t count = 0;
    if (bpf_map_lookup_elem(fd, &next, &count) == 0) all[next.site][next.value] = count;
    key = next;
    previous = &key;
  }
  return all;
}

// Every (site, string) -> count of the string group map; `bound` cuts
// what a key holds past the bound (the byte that told a cut string).
std::map<uint32_t, std::map<std::pair<std::string, bool>, uint64_t>> read_string_keyed(const bpf_map* map,
                                                                                          size_t bound) {
  std::map<uint32_t, std::map<std::pair<std::string, bool>, uint64_t>> all;
  const int fd = bpf_map__fd(map);
  xref_probe_string_key key{}, next{};
  const xref_probe_string_key* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    uint64_t count = 0;
    if (bpf_map_lookup_elem(fd, &next, &count) == 0) {
      const size_t length = std::min<uint64_t>(next.value & XREF_STRING_LENGTH_MASK, bound);
      all[next.site][{string_slot_text(next.bytes, length), (next.value & XREF_STRING_CUT) != 0}] += count;
    }
    key = next;
    previous = &key;
  }
  return all;
}

void add_counts(xref_probe_counts& total, const xref_probe_counts& cpu) {
  total.hits += cpu.hits;
  total.passed += cpu.passed;
  total.unfiltered += cpu.unfiltered;
  total.records += cpu.records;
  total.records_lost += cpu.records_lost;
  total.callers_full += cpu.callers_full;
  total.threads_full += cpu.threads_full;
  total.groups_full += cpu.groups_full;
  total.caller_unread += cpu.caller_unread;
  total.stacks_unread += cpu.stacks_unread;
  total.groups_unread += cpu.groups_unread;
  for (size_t bucket = 0; bucket < XREF_PROBE_HIST_BUCKETS; ++bucket) total.hist[bucket] += cpu.hist[bucket];
}

}  // namespace

Result<std::unique_ptr<ProbeBpf>> ProbeBpf::start(const ProbePlan& plan, const ProbeBpfOptions& options) {
  if (auto ringbuf = check_ringbuf_bytes(options.ringbuf_bytes); !ringbuf) return ringbuf.error();
  std::vector<UprobeSet> sets(plan.modules.all().size());
  for (uint32_t module = 0; module < sets.size(); ++module) sets[module].path = plan.modules[module].module->open_path;
  for (size_t index = 0; index < plan.sites.size(); ++index) {
    UprobeSet& set = sets[plan.sites[index].module_index];
    set.offsets.push_back(plan.sites[index].file_offset);
    set.cookies.push_back(index);
  }
  std::unique_ptr<ProbeBpf> probe(new ProbeBpf());
  auto backend = attach_uprobe_backend(options.backend, [&](bool uprobe_multi) -> Result<void> {
    Error error;
    probe->skeleton_ = open_configured(plan, options, uprobe_multi, error);
    if (probe->skeleton_ == nullptr) return error;
    auto link = attach_uprobe_sets(uprobe_multi, bpf_program__fd(hit_program(probe->skeleton_, plan)), options.pid, sets);
    if (!link) {
      probe_bpf__destroy(probe->skeleton_);
      probe->skeleton_ = nullptr;
      return link.error();
    }
    probe->link_ = std::move(*link);
    probe->program_fd_ = bpf_program__fd(hit_program(probe->skeleton_, plan));
    return {};
  });
  if (!backend) return backend.error();
  probe->backend_ = *backend;
  probe->sets_ = std::move(sets);
  probe->pid_ = options.pid;
  probe->group_string_bound_ = plan.group_string_bound;
  return probe;
}

ProbeBpf::~ProbeBpf() {
  link_.close();
  if (skeleton_ != nullptr) probe_bpf__destroy(skeleton_);
}

int ProbeBpf::ringbuf_fd() const { return bpf_map__fd(skeleton_->maps.records); }

void ProbeBpf::arm() { __atomic_store_n(&skeleton_->bss->armed, 1, __ATOMIC_SEQ_CST); }

void ProbeBpf::detach() {
  if (skeleton_ != nullptr) __atomic_store_n(&skeleton_->bss->detaching, 1, __ATOMIC_SEQ_CST);
  link_.close();
}

Result<void> ProbeBpf::release(const std::vector<uint32_t>& sites) {
  for (UprobeSet& set : sets_) {
    for (size_t at = set.cookies.size(); at-- > 0;) {
      if (std::find(sites.begin(), sites.end(), set.cookies[at]) == sites.end()) continue;
      set.cookies.erase(set.cookies.begin() + static_cast<ptrdiff_t>(at));
      set.offsets.erase(set.offsets.begin() + static_cast<ptrdiff_t>(at));
    }
  }
  // Out first: the kernel restores a site's original byte only when it finds
  // its int3 there, and no hit may count twice.
  link_.close();
  auto link = attach_uprobe_sets(backend_ == "uprobe_multi", program_fd_, pid_, sets_);
  if (!link) return link.error();
  link_ = std::move(*link);
  return {};
}

uint64_t ProbeBpf::samples_over_limit() const {
  const uint64_t limit = skeleton_->rodata->max_records;
  const uint64_t sampled = __atomic_load_n(&skeleton_->bss->records_total, __ATOMIC_RELAXED);
  return limit != 0 && sampled > limit ? sampled - limit : 0;
}

std::optional<xref_probe_stop> ProbeBpf::stop() const {
  if (__atomic_load_n(&skeleton_->bss->stop_info.fired, __ATOMIC_ACQUIRE) == 0) return std::nullopt;
  xref_probe_stop copy;
  std::memcpy(&copy, const_cast<const xref_probe_stop*>(&skeleton_->bss->stop_info), sizeof copy);
  return copy;
}

bool ProbeBpf::until_hits_reached() const { return __atomic_load_n(&skeleton_->bss->stopped, __ATOMIC_RELAXED) != 0; }

std::vector<xref_probe_counts> ProbeBpf::site_counts(size_t sites) const {
  std::vector<xref_probe_counts> totals(sites);
  const int cpus = libbpf_num_possible_cpus();
  std::vector<xref_probe_counts> per_cpu(static_cast<size_t>(cpus > 0 ? cpus : 1));
  for (uint32_t index = 0; index < sites; ++index) {
    std::memset(&totals[index], 0, sizeof(xref_probe_counts));
    if (bpf_map__lookup_elem(skeleton_->maps.counts, &index, sizeof index, per_cpu.data(),
                             per_cpu.size() * sizeof(xref_probe_counts), 0) != 0) {
      continue;
    }
    for (const xref_probe_counts& cpu : per_cpu) add_counts(totals[index], cpu);
  }
  return totals;
}

ProbeCounts ProbeBpf::counts(size_t sites) const {
  ProbeCounts counts;
  counts.sites = site_counts(sites);
  counts.callers = read_keyed(skeleton_->maps.callers);
  counts.threads = read_keyed(skeleton_->maps.threads);
  counts.groups = read_keyed(skeleton_->maps.groups);
  if (group_string_bound_ != 0) {
    counts.string_groups = read_string_keyed(skeleton_->maps.string_groups, group_string_bound_);
  }
  counts.stacks = read_keyed(skeleton_->maps.stacks);
  const size_t depth = bpf_map__value_size(skeleton_->maps.stack_traces) / sizeof(uint64_t);
  for (const auto& [site, keys] : counts.stacks) {
    for (const auto& [key, hits] : keys) {
      const uint32_t id = static_cast<uint32_t>(key & ((1u << XREF_STACK_ID_BITS) - 1));
      if (counts.stack_frames.count(id)) continue;
      std::vector<uint64_t> frames(depth, 0);
      if (bpf_map__lookup_elem(skeleton_->maps.stack_traces, &id, sizeof id, frames.data(),
                               frames.size() * sizeof(uint64_t), 0) != 0) {
        continue;
      }
      while (!frames.empty() && frames.back() == 0) frames.pop_back();
      counts.stack_frames[id] = std::move(frames);
    }
  }
  return counts;
}

}  // namespace xref
