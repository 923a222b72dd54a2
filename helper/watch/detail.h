// --fetch, --filter, --regs and --callers of `xref watch`: the fetches and
// the filter compiled for the watch programs (bpf/watch_detail.bpf.h), the
// return-address rule of each store site, and what the programs read back
// (the detail after a record, the stacks counted per writer site).
//
// The filter's names are the fetched ones, then `value` and `old`: the
// range's bytes after and before the write as an unsigned integer of its
// length (1, 2, 4 or 8 bytes; a write that covers part of the range is
// merged with the rest of it). A write whose new bytes are read after the
// store (an after-site, the thread's next probe, a contract's return) is
// filtered there, on the bytes read, never on a guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "elf_image.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/plan.h"
#include "watch/request.h"
#include "watch_abi.h"

struct bpf_map;

namespace xref {

// The filter names besides the fetched ones, at slots fetches.size() and + 1.
inline constexpr const char* kWatchValueName = "value";
inline constexpr const char* kWatchOldName = "old";

// Whether the records carry an xref_watch_detail.
bool watch_detail_wanted(const WatchRequest& request);

// Parses --fetch and --filter into plan.fetches and plan.filter. Bad
// input: invalid_argument naming the option (and its column); a filter
// that names `value` or `old` over a range that is not 1, 2, 4 or 8 bytes.
Result<void> plan_watch_detail(const WatchRequest& request, WatchPlan& plan);

// --callers, stores: each site's return-address rule from its module's
// .eh_frame CFA rule (`images` by WatchPlan::modules index; a contract's
// entry reads [rsp] itself). Sites without a usable rule are counted in
// plan.callers_unknown.
void plan_site_callers(const std::vector<std::shared_ptr<const ElfImage>>& images, WatchPlan& plan);

// The programs' read-only switches (the same names in both skeletons).
template <class Rodata>
void set_watch_detail_switches(Rodata& rodata, const WatchPlan& plan, const WatchRequest& request) {
  rodata.with_detail = watch_detail_wanted(request) ? 1 : 0;
  rodata.want_regs = request.regs ? 1 : 0;
  rodata.want_callers = request.callers ? 1 : 0;
  rodata.filtering = plan.filter && !plan.filter->instructions.empty() ? 1 : 0;
  rodata.fetch_count = static_cast<uint8_t>(plan.fetches.size());
}

// Before load: the stack map holds XREF_WATCH_MAX_STACKS stacks with
// --callers, else one (it costs its value size per entry).
void size_watch_stack_map(bpf_map* stack_traces, bool callers);

// After load: the compiled fetches and filter into their maps.
Result<void> fill_watch_detail_maps(const WatchPlan& plan, bpf_map* fetches, bpf_map* filter);

// A record's detail, when the ring-buffer entry carries one (`size` past
// the record), into `record`: its fetched values, registers, caller and
// stack (frames read from `stack_traces`).
void decode_watch_detail(const void* data, size_t size, const WatchPlan& plan, const bpf_map* stack_traces,
                         WatchRecord& record);

// The stack of a write: the frame-pointer walk's frames, where the site's
// CFA-rule return address `caller` (when read) is frame 1. A walk whose
// frame 1 is not that address went wrong there (code without frame
// pointers): the stack ends at the caller.
std::vector<uint64_t> watch_stack_frames(const std::vector<uint64_t>& walked, uint64_t caller);

// The frames the kernel walked for stack `id` (none when it is < 0 or gone).
std::vector<uint64_t> walked_stack(const bpf_map* stack_traces, int64_t id);

// --callers: every (site, stack) count of the `stacks` map, with frames.
std::vector<WatchStackCount> read_watch_stacks(const bpf_map* stacks, const bpf_map* stack_traces);

}  // namespace xref
