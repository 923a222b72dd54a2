// What `xref watch` will watch, resolved against the live process: the
// ranges (ADDRs and --follow targets) and, for the stores engine, the store
// sites that can reach them. plan.cpp builds it from a WatchRequest.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fetch_spec.h"
#include "filter_program.h"
#include "process/target.h"
#include "result.h"
#include "bpf_abi.h"
#include "sites/store_sites.h"
#include "watch/request.h"

namespace xref {

struct WatchRange {
  std::string spelled;          // as the user typed it ("g_total", "0x7f..:64", "order->amount" from a debugger)
  uint64_t address = 0;         // live start
  uint32_t length = 0;          // bytes
  std::string module;           // the mapping it lies in (path), empty for anonymous memory
  std::string symbol;           // the data symbol it starts at or lies in, with "+0x.." when inside
  bool on_stack = false;        // in some thread's [stack] or a thread stack mapping
  // --follow: this range is a dependent target. `follow_slot` is the range
  // index of the pointer slot it follows; its address is *slot + follow_offset.
  std::optional<uint32_t> follow_slot;
  int64_t follow_offset = 0;
  bool is_slot = false;         // a pointer slot watched for a --follow (8 bytes)
  bool parked = false;          // a --follow target whose slot holds 0: not watched until it moves
  std::string follow_spelled;   // the --follow SPEC it came from
};

// A store site made live for one module: where the uprobe goes.
struct WatchSite {
  uint32_t module = 0;          // index into WatchPlan::modules
  uint64_t static_va = 0;
  uint64_t live_va = 0;
  uint64_t file_offset = 0;     // what the uprobe is attached at
  xref_watch_site operand{};    // rip-relative disp already live
  std::string function;         // the function it lies in (demangled when the image has names)
  uint64_t function_offset = 0;
  std::string text;
  bool by_contract = false;     // a libc writer's entry or return (CONTRACT_*): `function` is its name
};

struct WatchModule {
  std::string path;
  std::string open_path;        // what the uprobes attach to (/proc/PID/map_files/..., as probe does)
  uint64_t load_bias = 0;
  StoreSiteCounts counts;       // what was found and probed in it
};

struct WatchPlan {
  pid_t pid = 0;
  std::vector<WatchRange> ranges;
  std::vector<WatchModule> modules;  // stores engine: the modules searched (--in)
  std::vector<WatchSite> sites;      // stores engine: index = the attach cookie
  std::string scope;                 // what --in covered, in words ("the executable's code: 212 functions")
  std::vector<std::string> contracts;  // libc writers watched by contract: "memcpy (__memmove_evex_unaligned_erms)"
  uint64_t after_sites = 0;          // AFTER sites added for stores whose new value is read after them
  uint64_t after_missing = 0;        // stores whose next instruction takes no probe (EVEX): read at a later hit
  uint64_t refused = 0;              // stores the kernel takes no uprobe on (lock prefix, segment override), not seen
  uint64_t after_only = 0;           // of those, seen at their next instruction (lock xadd, cmpxchg, lock add ...)
  std::optional<xref_filter_program> stop_filter;  // --stop-when, lowered (watch/stop_when.h)
  std::vector<std::string> warnings;
  // --fetch, --filter, --regs, --callers (watch/detail.h): what each write
  // carries besides its bytes.
  std::vector<FetchItem> fetches;
  std::optional<FilterProgram> filter;  // slots: the fetches, then `value`, then `old`
  std::vector<xref_watch_site_caller> site_callers;  // --callers, stores: by site index
  uint64_t callers_unknown = 0;         // --callers: store sites whose return address has no rule
};

// The ranges of the request (ADDRs, --follow slots and targets), resolved
// and checked against the live mappings: bad input is one error naming it
// (unknown_symbol, not_data, read_only_address, address_unmapped,
// bad_length, invalid_argument).
Result<WatchPlan> plan_watch_ranges(const Target& target, const WatchRequest& request);

// The stores engine's sites for the plan's ranges: the store sites of the
// modules in scope (--in) pruned against the ranges, made live, with their
// AFTER sites and the libc writers by contract.
Result<void> plan_store_sites(const Target& target, const WatchRequest& request, WatchPlan& plan);

}  // namespace xref
