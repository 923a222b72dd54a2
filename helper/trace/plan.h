// From a TraceRequest to the exact set of probes: every traced function's
// entry, each of its ret instructions and tail jumps (found by disassembly,
// so returns are seen without uretprobes), the --stop address, and the fetch
// specs compiled for each. Every probe site is checked to be an
// instruction start: a uprobe inside an instruction corrupts the target.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "address_space.h"
#include "sites/probe_modules.h"
#include "elf_image.h"
#include "fetch_spec.h"
#include "filter_program.h"
#include "process/target.h"
#include "result.h"
#include "trace/request.h"
#include "trace_abi.h"

namespace xref {

// A file the plan puts probes in: the executable (index 0) or a shared
// library named as "module:symbol" (sites/probe_modules.h).
using PlanModule = ProbeModule;

struct TracedFunction {
  uint32_t id = 0;
  uint32_t module_index = 0;      // into TracePlan::modules
  FunctionSymbol symbol;          // for an indirect call site: a placeholder named "indirect@SITE"
  bool indirect = false;          // the callee of one indirect call site, named at run time
  // Reached by a tail jump from a start function and not traced itself: only
  // its rets and tail jumps are probed, to see when the start frame ends.
  bool continuation = false;
  std::string implementation;     // a GNU IFUNC named by the user: the implementation probed (symbol keeps
                                  // the name given, its start and size are the implementation's)
  std::vector<FetchItem> entry_fetches;
  std::vector<FetchItem> return_fetches;
  bool stop_return = false;
};

struct PlannedProbe {
  uint32_t module_index = 0;       // into TracePlan::modules
  uint64_t static_va = 0;          // in that module
  uint64_t file_offset = 0;
  uint32_t function_id = 0;
  uint8_t kind = XREF_PROBE_ENTRY;
  uint8_t flags = 0;
  bool start = false;
  std::vector<FetchItem> fetches;
  bool indirect = false;           // a call site whose fetch "target" names the callee
  // XREF_PROBE_F_RETURN_SITE: this address is also the return site of a call
  // to return_function_id (back-to-back calls share it).
  uint32_t return_function_id = 0;
  // A start probe inside its function (a breakpoint location): how its
  // frame's entry sp is found (trace_abi.h, xref_probe.frame_base).
  uint8_t frame_base = XREF_FRAME_BASE_SP;
  int32_t frame_offset = 0;
  // The roles of one address (trace_abi.h, XREF_PROBE_MAX_ROLES): only the
  // head is attached; `next` is the next role's index, -1 for the last.
  bool head = true;
  int32_t next = -1;
  // TAIL_EXIT: the function the jump enters (its frame's new function), or
  // XREF_FUNCTION_NONE when that function is not in the plan.
  uint32_t tail_target_id = XREF_FUNCTION_NONE;
  uint64_t tail_target_va = 0;  // TAIL_EXIT: the jump's target, in the same module
};

// --here: the window the engine opens on the debugger's stopped thread as
// soon as the probes are in, on the frame of `function_id`.
struct HereWindow {
  uint32_t tid = 0;
  uint64_t entry_sp = 0;  // the frame's CFA - 8: where its return address is
  uint32_t function_id = 0;
};

struct TracePlan {
  const Module* module = nullptr;            // the main executable
  std::shared_ptr<const ElfImage> image;     // its image
  std::vector<PlanModule> modules;           // [0] is the main executable
  std::vector<TracedFunction> functions;     // indexed by id
  std::vector<PlannedProbe> probes;          // indexed by cookie
  uint64_t start_va = 0;
  uint32_t start_module_index = 0;           // the module of start_va (into modules)
  std::optional<uint64_t> stop_va;
  uint64_t stop_return_va = 0;
  std::vector<FetchItem> start_fetches;
  std::optional<FilterProgram> start_filter;
  std::string return_mode = "ret_site_exact";
  std::string mode = "functions";            // functions, callees_of, all_calls_in
  std::vector<std::string> warnings;
  // --functions globs: each pattern with how many functions it matched.
  std::vector<std::pair<std::string, size_t>> globs;
  std::vector<uint64_t> entry_nop_probes;    // probes that sit on a 5-byte nop (fast on 6.18)
  std::optional<HereWindow> here;            // --here
  std::vector<uint32_t> breakpoints_to_disable;  // --start bp:N: N, whose locations carry start probes
  std::vector<std::string> unwind_checks;    // "libstdc++.so.6:__cxa_begin_catch": where unwinding is seen

  // The roles at the address of `head`, in the order they act.
  template <typename Visit>
  void for_each_role(size_t head, Visit&& visit) const {
    for (int32_t index = static_cast<int32_t>(head); index >= 0; index = probes[static_cast<size_t>(index)].next) {
      visit(static_cast<size_t>(index), probes[static_cast<size_t>(index)]);
    }
  }
};

// The stages are in planning/stages.h; names are resolved, probe sites checked
// and function exits found by the sites room (sites/function_names.h,
// sites/probe_site_check.h, sites/function_sites.h, sites/call_sites.h).
Result<TracePlan> plan_trace(const Target& target, const TraceRequest& request);

}  // namespace xref
