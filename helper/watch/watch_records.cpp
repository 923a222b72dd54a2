#include "watch/watch_records.h"

#include <bpf/libbpf.h>

#include <algorithm>

namespace xref {

WatchRecord decode_watch_record(const xref_watch_record& raw) {
  WatchRecord record;
  record.kind = WatchRecordKind::write;
  record.sequence = raw.sequence;
  record.timestamp_ns = raw.timestamp_ns;
  record.tid = raw.tid;
  record.range = raw.range;
  record.generation = raw.generation;
  record.address = raw.address;
  record.length = raw.length;
  record.flags = raw.flags;
  const size_t kept = std::min<size_t>(raw.length, XREF_WATCH_VALUE_BYTES);
  record.old_bytes.assign(raw.old_bytes, raw.old_bytes + kept);
  record.new_bytes.assign(raw.new_bytes, raw.new_bytes + kept);
  record.site = raw.site;
  record.pc = raw.pc;
  record.writer_pc = raw.pc;
  record.return_address = raw.return_address;
  return record;
}

std::vector<WatchRangeCounts> sum_range_counts(const bpf_map* counts, size_t ranges) {
  std::vector<WatchRangeCounts> totals(ranges);
  const int cpus = libbpf_num_possible_cpus();
  std::vector<xref_watch_counts> per_cpu(static_cast<size_t>(cpus > 0 ? cpus : 1));
  for (uint32_t index = 0; index < totals.size(); ++index) {
    if (bpf_map__lookup_elem(counts, &index, sizeof index, per_cpu.data(), per_cpu.size() * sizeof(xref_watch_counts),
                             0) != 0) {
      continue;
    }
    WatchRangeCounts& total = totals[index];
    for (const xref_watch_counts& cpu : per_cpu) {
      total.writes += cpu.writes;
      total.unchanged += cpu.unchanged;
      total.passed += cpu.passed;
      total.records += cpu.records;
      total.records_lost += cpu.records_lost;
      total.unread += cpu.unread;
      total.in_flight_full += cpu.in_flight_full;
      total.unfiltered += cpu.unfiltered;
      total.stacks_unread += cpu.stacks_unread;
    }
  }
  return totals;
}

}  // namespace xref
