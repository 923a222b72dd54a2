#include "probe/tracefs/tally.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <span>

#include "filter_program.h"

namespace xref {
namespace {

// log2_bucket: 0 for 0, then 1 + floor(log2(value)), at most the last bucket.
uint32_t log2_bucket(uint64_t value) {
  const uint32_t bucket = static_cast<uint32_t>(std::bit_width(value));
  return bucket < XREF_PROBE_HIST_BUCKETS ? bucket : XREF_PROBE_HIST_BUCKETS - 1;
}

}  // namespace

ProbeTally::ProbeTally(const ProbePlan& plan, const ProbeTallyOptions& options)
    : plan_(plan), options_(options), site_passed_(plan.sites.size(), 0) {
  counts_.sites.assign(plan.sites.size(), xref_probe_counts{});
}

bool ProbeTally::count_key(std::map<uint32_t, std::map<uint64_t, uint64_t>>& map, size_t& entries, size_t capacity,
                           uint32_t site, uint64_t value) {
  auto& of_site = map[site];
  if (auto found = of_site.find(value); found != of_site.end()) {
    ++found->second;
    return true;
  }
  if (entries >= capacity) return false;
  of_site[value] = 1;
  ++entries;
  return true;
}

// emit_record: the --max-events bound counts every sampled hit; the ring
// buffer the BPF program may find full is not in the way here.
void ProbeTally::emit_record(const SiteHit& hit, xref_probe_counts& count, uint64_t number,
                             const ProbeRecordSink& sample) {
  if (options_.max_records != 0 && records_total_++ >= options_.max_records) return;
  ProbeRecord record;
  record.site = hit.site;
  record.tid = hit.tid;
  record.hit = number;
  record.timestamp_ns = hit.timestamp_ns;
  record.return_address = hit.return_address;
  __u64 values[XREF_FETCH_MAX_ITEMS];
  const __s16 no_errors[XREF_FETCH_MAX_ITEMS] = {};
  std::copy(hit.values.begin(), hit.values.end(), values);
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  for (size_t i = 0; i < XREF_FETCH_MAX_ITEMS; ++i) errors[i] = ((hit.failed >> i) & 1u) ? -EFAULT : no_errors[i];
  // The string slots as the BPF record holds them.
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES] = {};
  for (size_t slot = 0; slot < XREF_FETCH_MAX_STRINGS; ++slot) {
    std::copy_n(hit.strings[slot].begin(), std::min(hit.strings[slot].size(), size_t{XREF_STRING_MAX_BYTES}),
                strings[slot]);
  }
  record.fetches = fetched_values(plan_.fetches, hit.fetch_count, hit.failed, values, errors, &strings[0][0]);
  if (hit.has_regs) record.regs.assign(hit.regs.begin(), hit.regs.end());
  ++count.records;
  sample(std::move(record));
}

void ProbeTally::hit(const SiteHit& hit, const ProbeRecordSink& sample) {
  // probe_hit: nothing counts once --until-hits is reached.
  if (stopped_ || hit.site >= plan_.sites.size()) return;
  const ProbeSite& site = plan_.sites[hit.site];
  xref_probe_counts& count = counts_.sites[hit.site];
  ++count.hits;

  if (site.ret) {
    // A ret of the address's function: only its return value counts.
    if (!count_key(counts_.groups, groups_entries_, XREF_PROBE_MAX_GROUPS, hit.site, hit.ret)) ++count.groups_full;
    return;
  }

  // filter_result: no failed read to make a hit unfiltered (the kernel
  // reads 0 where it cannot read, and a string it could not read is ""),
  // so only accepted or rejected.
  const std::span<const uint64_t> values(hit.values.data(), hit.fetch_count);
  if (plan_.filter && !evaluate_program(*plan_.filter, values, hit.strings)) return;
  if (options_.until_hits != 0) {
    const uint64_t total = ++passed_total_;
    if (total > options_.until_hits) return;
    if (total == options_.until_hits) {
      stopped_ = true;
      stopped_at_ = hit.timestamp_ns;
    }
  }
  ++count.passed;
  const uint64_t number = ++site_passed_[hit.site];

  if (!count_key(counts_.threads, threads_entries_, XREF_PROBE_MAX_THREADS, hit.site, hit.tid)) ++count.threads_full;

  const xref_probe_site& compiled = site.compiled;
  if (compiled.caller != XREF_CALLER_NONE) {
    if (hit.return_address == 0) {
      ++count.caller_unread;
    } else if (!count_key(counts_.callers, callers_entries_, XREF_PROBE_MAX_CALLERS, hit.site, hit.return_address)) {
      ++count.callers_full;
    }
  }

  bool grouped = true;
  uint64_t key = 0;
  if (compiled.group == XREF_GROUP_TID) {
    key = hit.tid;
  } else if (compiled.group == XREF_GROUP_CALLER) {
    key = hit.return_address;
    grouped = hit.return_address != 0;
  } else if (compiled.group == XREF_GROUP_FETCH) {
    grouped = compiled.group_slot < hit.fetch_count;
    key = grouped ? hit.values[compiled.group_slot] : 0;
  } else {
    grouped = false;
  }
  const bool keyed = compiled.group == XREF_GROUP_TID || compiled.group == XREF_GROUP_CALLER ||
                     compiled.group == XREF_GROUP_FETCH;
  if (compiled.group == XREF_GROUP_STRING) {
    // count_string_group: the string and whether it was cut, as the key.
    const uint8_t slot = compiled.group_slot;
    if (slot >= hit.fetch_count || ((hit.failed >> slot) & 1u)) {
      ++count.groups_unread;
    } else {
      auto& of_site = counts_.string_groups[hit.site];
      const std::pair<std::string, bool> string_key{hit.strings[compiled.string_slot % XREF_FETCH_MAX_STRINGS],
                                                    (hit.values[slot] & XREF_STRING_CUT) != 0};
      if (auto found = of_site.find(string_key); found != of_site.end()) {
        ++found->second;
      } else if (string_groups_entries_ < XREF_PROBE_MAX_STRING_GROUPS) {
        of_site[string_key] = 1;
        ++string_groups_entries_;
      } else {
        ++count.groups_full;
      }
    }
  } else if (keyed && !grouped) {
    ++count.groups_unread;
  } else if (grouped && !count_key(counts_.groups, groups_entries_, XREF_PROBE_MAX_GROUPS, hit.site, key)) {
    ++count.groups_full;
  }

  if (compiled.hist_slot < hit.fetch_count) ++count.hist[log2_bucket(hit.values[compiled.hist_slot])];

  const uint64_t step = options_.every != 0 ? options_.every : 1;
  if (number % step == 0 && (options_.first == 0 || number / step <= options_.first)) {
    emit_record(hit, count, number, sample);
  }
}

uint64_t ProbeTally::samples_not_kept() const {
  return options_.max_records != 0 && records_total_ > options_.max_records ? records_total_ - options_.max_records
                                                                            : 0;
}

}  // namespace xref
