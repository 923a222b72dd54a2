// What run_watch drives: an engine that watches the plan's ranges and hands
// every write it saw to a sink, in the order it saw them. Two engines: `hw`
// (hw_engine.h: a perf breakpoint per range per thread, a BPF program on
// each) and `stores` (stores_engine.h: uprobes on the store instructions
// that can reach the ranges). start_watch_engine chooses (`auto`) and says
// why.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attach/fetched_value.h"
#include "process/target.h"
#include "result.h"
#include "watch/plan.h"
#include "watch/request.h"
#include "watch_abi.h"

namespace xref {

enum class WatchRecordKind : uint8_t {
  write,               // a write an engine saw: writer known
  unobserved_change,   // the bytes changed between two reads and no engine record explains it (the kernel,
                       // code outside --in): the interval is [since_ns, timestamp_ns]
  rearm,               // --follow moved a dependent range: unwatched from since_ns to timestamp_ns
};

struct WatchRecord {
  WatchRecordKind kind = WatchRecordKind::write;
  uint64_t sequence = 0;
  uint64_t timestamp_ns = 0;      // CLOCK_MONOTONIC
  uint64_t since_ns = 0;          // unobserved_change, rearm: the start of the interval
  uint32_t tid = 0;               // 0: unknown (unobserved_change)
  uint32_t range = 0;             // index into WatchPlan::ranges
  uint32_t generation = 0;
  uint64_t address = 0;           // live address of the first byte written in the range
  uint32_t length = 0;
  uint32_t flags = 0;             // XREF_WATCH_R_*
  std::vector<uint8_t> old_bytes;
  std::vector<uint8_t> new_bytes;
  uint32_t site = XREF_WATCH_SITE_HW;  // the stores engine's site (WatchPlan::sites index)
  uint64_t pc = 0;                // hw: the trap pc; stores: the writer's live address
  uint64_t writer_pc = 0;         // the writing instruction's live address (hw: decoded back from pc)
  std::string writer_text;        // hw: the writer's Intel text (stores: the site's)
  uint64_t return_address = 0;    // a contract writer's caller
  std::vector<uint64_t> stack;    // --callers: frame 0 the pc, then return addresses (watch_stack_frames)
  // --fetch, --regs, --callers: read where the write was seen (stores: at
  // the uprobe, before the store ran; hw: after the trap).
  bool has_detail = false;
  std::vector<FetchedValue> fetches;
  std::vector<uint64_t> regs;     // --regs: pt_regs order (r15 .. ss)
  uint64_t caller = 0;            // --callers: the return address by the site's CFA rule (0: none)
};

// --callers: passing writes counted by (writer site, stack) in BPF.
struct WatchStackCount {
  uint32_t site = XREF_WATCH_SITE_HW;  // the stores engine's site; hw: frame 0 is the trap pc
  uint64_t writes = 0;
  std::vector<uint64_t> frames;        // watch_stack_frames
};

// WatchRecord::flags set by the helper, above the XREF_WATCH_R_* of the BPF
// programs: `old` is the bytes the records before it left (a lock or/and,
// whose old value no register holds after it; run.cpp says when).
constexpr uint32_t kWatchOldFromRecords = 1u << 16;

using WatchRecordSink = std::function<void(WatchRecord&& record)>;

// --stop-when: the write whose record made it hold (its sequence number)
// and the signal sent to its thread.
struct WatchStop {
  uint64_t sequence = 0;
  uint32_t tid = 0;
  uint32_t range = 0;
  uint64_t match = 0;          // the stop condition's passes up to it (--stop-skip + 1)
  uint64_t timestamp_ns = 0;
  int64_t signal_result = 0;   // bpf_send_signal_thread's answer: 0 sent
};

// Per range, summed over CPUs.
struct WatchRangeCounts {
  uint64_t writes = 0;
  uint64_t unchanged = 0;
  uint64_t passed = 0;
  uint64_t records = 0;
  uint64_t records_lost = 0;
  uint64_t unread = 0;
  uint64_t in_flight_full = 0;
  uint64_t unfiltered = 0;        // --filter: writes whose filter needed a value that was not read
  uint64_t stacks_unread = 0;     // --callers: passing writes whose stack was not walked or kept
};

class WatchEngine {
 public:
  virtual ~WatchEngine() = default;
  virtual const std::string& backend() const = 0;  // "hw", "stores"
  // Every probe or breakpoint is in: recording starts for all ranges at once.
  virtual Result<void> arm() = 0;
  // One bounded round of records to the sink: true when it stopped with
  // more ready. After detach(), everything, and false.
  virtual Result<bool> drain() = 0;
  // --follow: range `range` now starts at `address` (same length); the
  // engine bumps its generation.
  virtual Result<void> move_range(uint32_t range, uint64_t address) = 0;
  virtual bool until_hits_reached() const = 0;
  virtual void detach() = 0;
  virtual std::vector<WatchRangeCounts> range_counts() const = 0;
  // The ranges a write is in flight to now: its store ran (or runs) and its
  // record is not out yet (stores: new bytes read at a later probe). The
  // unobserved-change check leaves them for the next drain. hw: none.
  virtual std::vector<uint32_t> ranges_in_flight() const { return {}; }
  // --callers: the stacks counted per writer site (after detach()).
  virtual std::vector<WatchStackCount> stack_counts() const { return {}; }
  // Readable when a record must be taken at once (a --follow slot's write:
  // the dependents re-arm on it), not at the drain timer; -1: none.
  // woken() takes the readiness out.
  virtual int wake_fd() { return -1; }
  virtual void woken() {}
  // What the result must say about this engine's coverage ("thread 123 armed
  // 40 us after it started", "312 EVEX stores not probed").
  virtual std::vector<std::string> warnings() const { return {}; }
  // session.release: these sites (WatchPlan::sites) take no probe from now
  // on; writes there are seen only as unobserved changes.
  virtual Result<void> release(const std::vector<uint32_t>& sites) {
    (void)sites;
    return make_error(ErrorCode::unsupported, "the " + backend() + " engine has no store sites to release");
  }
  // --stop-when: the write that stopped its thread, once.
  virtual std::optional<WatchStop> stop() const { return std::nullopt; }
};

// Which engine runs the request, and why (printed and in the JSON):
// --backend hw or stores as asked; auto is hw only where the live
// self-test says the debug registers fire and the ranges fit them, else
// stores. --backend hw where they do not fire: an error naming the test.
struct WatchBackendChoice {
  std::string backend;  // "hw", "stores"
  std::string reason;   // "debug registers do not fire here - doctor's self-test counted 0 of 100 writes"
};
Result<WatchBackendChoice> choose_watch_backend(const WatchPlan& plan, const WatchRequest& request);

// Starts the chosen engine; for stores, plans its sites first
// (plan_store_sites). The engine reads `plan` for as long as it runs.
Result<std::unique_ptr<WatchEngine>> start_watch_engine(const Target& target, WatchPlan& plan,
                                                        const WatchRequest& request,
                                                        const WatchBackendChoice& choice, WatchRecordSink sink);

}  // namespace xref
