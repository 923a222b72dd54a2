// What both watch engines read back from their BPF programs alike: a ring
// buffer record (shared/watch_abi.h) as a WatchRecord, and the per-CPU
// counts of each range summed.
#pragma once

#include <cstddef>
#include <vector>

#include "watch/engine.h"
#include "watch_abi.h"

struct bpf_map;

namespace xref {

// The record as the program wrote it: its bytes cut to what it carries,
// the writer at its pc (the hw engine decodes the writer back from it).
WatchRecord decode_watch_record(const xref_watch_record& raw);

// The PERCPU_ARRAY `counts` of xref_watch_counts, summed per range.
std::vector<WatchRangeCounts> sum_range_counts(const bpf_map* counts, size_t ranges);

}  // namespace xref
