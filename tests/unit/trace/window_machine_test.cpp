// The C++ window state machine against the rules of bpf/trace.bpf.c, one
// scenario each, written as the records the BPF program would emit.
#include "trace/window_machine.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "filter_expr.h"

namespace xref {
namespace {

// Probe indexes of the test plan.
enum : uint32_t {
  kStartEntry,   // function 0 (the start), entry, START
  kStartRet,     // function 0, ret
  kInnerEntry,   // function 1, entry
  kInnerRet,     // function 1, ret
  kInnerTail,    // function 1, tail exit
  kStop,         // --stop
  kCallSite,     // call of function 2 in function 0 (call-site mode)
  kReturnSite,   // its return site, also the call site of function 3 (back-to-back calls)
  kLastReturn,   // return site of function 3
  kUretprobe,    // function 1, uretprobe
  kTailSite,     // tail jmp to function 2 in function 1
};

PlannedProbe probe(uint32_t function, uint8_t kind, bool start = false, uint8_t flags = 0) {
  PlannedProbe planned;
  planned.function_id = function;
  planned.kind = kind;
  planned.start = start;
  planned.flags = flags;
  return planned;
}

TracePlan test_plan() {
  TracePlan plan;
  plan.probes = {
      probe(0, XREF_PROBE_ENTRY, true, XREF_PROBE_F_STOP_RETURN),
      probe(0, XREF_PROBE_RET, false, XREF_PROBE_F_STOP_RETURN),
      probe(1, XREF_PROBE_ENTRY),
      probe(1, XREF_PROBE_RET),
      probe(1, XREF_PROBE_TAIL_EXIT),
      probe(0xffffffff, XREF_PROBE_STOP),
      probe(2, XREF_PROBE_CALL_SITE),
      probe(3, XREF_PROBE_CALL_SITE, false, XREF_PROBE_F_RETURN_SITE),
      probe(3, XREF_PROBE_RETURN_SITE),
      probe(1, XREF_PROBE_URETPROBE),
      probe(2, XREF_PROBE_TAIL_SITE),
  };
  plan.probes[kReturnSite].return_function_id = 2;
  FetchItem id;
  id.name = "id";
  plan.probes[kStartEntry].fetches.push_back(id);
  return plan;
}

// Where the machine learns the words on the stack: from each hit's own sp
// only (tracefs records the word there), or anywhere at the moment of the
// hit (the BPF program reads it).
enum class Stack { at_sp, readable };

class Machine {
 public:
  explicit Machine(const TracePlan& plan, WindowMachineOptions options = {}, Stack stack = Stack::at_sp)
      : machine_(plan, options) {
    if (stack == Stack::readable) {
      machine_.set_stack_word([this](const ProbeHit&, uint64_t address) -> std::optional<uint64_t> {
        auto found = stack_.find(address);
        if (found == stack_.end()) return std::nullopt;
        return found->second;
      });
    }
  }

  // The thread's stack holds `word` at `address` from now on (a call wrote
  // its return address there).
  Machine& write(uint64_t address, uint64_t word) {
    stack_[address] = word;
    return *this;
  }

  // One hit; the records as "window seq kind depth function [flags]".
  Machine& hit(uint32_t probe_index, uint64_t sp, uint32_t tid = 7, uint64_t value = 0) {
    ProbeHit hit;
    hit.tid = tid;
    hit.probe_index = probe_index;
    hit.timestamp_ns = ++clock_;
    hit.sp = sp;
    if (auto found = stack_.find(sp); found != stack_.end()) hit.return_address = found->second;
    hit.fetch_count = 1;
    hit.values[0] = value;
    machine_.hit(hit, [&](const xref_trace_event& record) { records_.push_back(text(record)); });
    return *this;
  }
  const std::vector<std::string>& records() const { return records_; }
  WindowMachine& machine() { return machine_; }

 private:
  static std::string text(const xref_trace_event& record) {
    static const char* kinds[] = {"?", "entry", "return", "tail_exit", "unwound", "stop", "end"};
    std::string line = std::to_string(record.window_id) + " " + std::to_string(record.seq) + " " +
                       kinds[record.type <= 6 ? record.type : 0] + " " + std::to_string(record.depth);
    if (record.type == XREF_EVENT_WINDOW_END) {
      line += " status=" + std::to_string(record.status);
      if (record.function_id != XREF_FUNCTION_NONE) line += " in f" + std::to_string(record.function_id);
      if (record.flags & XREF_EVENT_F_INFERRED) line += " inferred";
      return line;
    }
    if (record.type != XREF_EVENT_STOP) line += " f" + std::to_string(record.function_id);
    if (record.flags & XREF_EVENT_F_WINDOW_BEGIN) line += " begin";
    if (record.flags & XREF_EVENT_F_TAIL) line += " tail";
    if (record.flags & XREF_EVENT_F_INFERRED) line += " inferred";
    return line;
  }
  WindowMachine machine_;
  std::vector<std::string> records_;
  std::map<uint64_t, uint64_t> stack_;
  uint64_t clock_ = 0;
};

using Lines = std::vector<std::string>;

TEST(WindowMachine, NestedCallsInOneWindow) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kInnerEntry, 0x1000)  // no window: ignored
      .hit(kStartEntry, 0x1000)
      .hit(kInnerEntry, 0x0f00)
      .hit(kInnerRet, 0x0f00)
      .hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1", "1 3 return 0 f0",
                                "1 4 end 0 status=1"}));
  // The end record (status=1 above) says it all: the result's room is back,
  // as in the BPF results map, so windows past its size are still counted.
  EXPECT_EQ(m.machine().window_results().count(1), 0u);
  EXPECT_EQ(m.machine().open_windows(), 0u);
}

TEST(WindowMachine, RecursionIntoTheStartIsAnEntry) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000).hit(kStartEntry, 0x0f00).hit(kStartRet, 0x0f00).hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f0", "1 2 return 1 f0", "1 3 return 0 f0",
                                "1 4 end 0 status=1"}));
}

TEST(WindowMachine, FramesLeftByUnwindingAreNoticedByTheNextEvent) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  // f1 entered twice, both unwound; the start frame's ret sees sp above them.
  m.hit(kStartEntry, 0x1000).hit(kInnerEntry, 0x0f00).hit(kInnerEntry, 0x0e00).hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f1", "1 3 unwound 2 f1",
                                "1 4 unwound 1 f1", "1 5 return 0 f0", "1 6 end 0 status=1"}));
}

TEST(WindowMachine, UnwindingPastTheStartFrameEndsTheWindowUnwound) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000).hit(kInnerEntry, 0x1100);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 unwound 0 f0", "1 2 end 0 status=3"}));
}

TEST(WindowMachine, ANewStartAboveTheOpenOneTruncatesIt) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000).hit(kStartEntry, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 end 0 status=2", "2 0 entry 0 f0 begin"}));
}

TEST(WindowMachine, ThreadsHaveTheirOwnWindows) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000, 1).hit(kStartEntry, 0x2000, 2).hit(kStartRet, 0x1000, 1).hit(kStartRet, 0x2000, 2);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "2 0 entry 0 f0 begin", "1 1 return 0 f0",
                                "1 2 end 0 status=1", "2 1 return 0 f0", "2 2 end 0 status=1"}));
}

TEST(WindowMachine, RetOfAnotherFrameIsIgnored) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  // A ret of f1 at an sp that is no frame of the window (a call begun before it).
  m.hit(kStartEntry, 0x1000).hit(kInnerRet, 0x0f00).hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 return 0 f0", "1 2 end 0 status=1"}));
}

TEST(WindowMachine, TailExitUretprobeAndStop) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000)
      .hit(kInnerEntry, 0x0f00)
      .hit(kInnerTail, 0x0f00)
      .hit(kInnerEntry, 0x0f00)
      .hit(kUretprobe, 0x0f08)  // after the ret: sp one word higher
      .hit(kStop, 0x0f08);
  // The tail exit hands the frame on; the entry at the same sp takes it over.
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 tail_exit 1 f1", "1 3 entry 1 f1 tail",
                                "1 4 return 1 f1", "1 5 stop 1", "1 6 end 0 status=1"}));
}

TEST(WindowMachine, CallAndReturnSitesWithBackToBackCalls) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  // Call sites run before the call pushes its return address: entry sp is sp - 8.
  m.hit(kStartEntry, 0x1000)
      .hit(kCallSite, 0x0f08)
      .hit(kReturnSite, 0x0f08)  // f2 returns here, and f3 is called from here
      .hit(kLastReturn, 0x0f08)
      .hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f2", "1 2 return 1 f2", "1 3 entry 1 f3",
                                "1 4 return 1 f3", "1 5 return 0 f0", "1 6 end 0 status=1"}));
}

TEST(WindowMachine, TailSiteTakesOverTheFrame) {
  const TracePlan plan = test_plan();
  Machine m(plan);
  m.hit(kStartEntry, 0x1000).hit(kInnerEntry, 0x0f00).hit(kTailSite, 0x0f00).hit(kStartRet, 0x1000);
  // f2's ret is not probed: its frame ends unobserved (its return
  // inferred), not unwound.
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 1 f2 tail",
                                "1 3 return 1 f2 inferred", "1 4 return 0 f0", "1 5 end 0 status=1"}));
}

TEST(WindowMachine, StartFilterOverTheStartFetches) {
  TracePlan plan = test_plan();
  std::vector<FetchItem> fetches = plan.probes[kStartEntry].fetches;
  auto parsed = parse_filter("id == 5", filter_variables(fetches));
  ASSERT_TRUE(parsed.ok());
  auto lowered = lower_filter(*parsed);
  ASSERT_TRUE(lowered.ok());
  plan.start_filter = *lowered;
  Machine m(plan);
  m.hit(kStartEntry, 0x1000, 7, 4).hit(kStartRet, 0x1000).hit(kStartEntry, 0x1000, 7, 5).hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 return 0 f0", "1 2 end 0 status=1"}));
  EXPECT_EQ(m.machine().counters().starts_filtered, 1u);
}

TEST(WindowMachine, MaxEventsStopsEverything) {
  const TracePlan plan = test_plan();
  Machine m(plan, WindowMachineOptions{2, 0});
  m.hit(kStartEntry, 0x1000).hit(kInnerEntry, 0x0f00).hit(kInnerRet, 0x0f00).hit(kStartRet, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1"}));
  EXPECT_TRUE(m.machine().counters().stopped);
  EXPECT_EQ(m.machine().counters().stop_reason, static_cast<uint32_t>(XREF_STOP_MAX_EVENTS));
}

TEST(WindowMachine, MaxWindowsStopsAfterTheLastWindowCloses) {
  const TracePlan plan = test_plan();
  Machine m(plan, WindowMachineOptions{0, 1});
  m.hit(kStartEntry, 0x1000, 1).hit(kStartEntry, 0x2000, 2).hit(kStartRet, 0x1000, 1).hit(kStartEntry, 0x1000, 1);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 return 0 f0", "1 2 end 0 status=1"}));
  EXPECT_EQ(m.machine().counters().stop_reason, static_cast<uint32_t>(XREF_STOP_MAX_WINDOWS));
  EXPECT_EQ(m.machine().counters().windows_opened, 1u);
}

TEST(WindowMachine, StopReturnClosesAtTheFirstStopReturnFrame) {
  TracePlan plan = test_plan();
  // f1 is the --stop-return function: its entry and ret carry the flag.
  plan.probes[kStartEntry].flags = 0;
  plan.probes[kStartRet].flags = 0;
  plan.probes[kInnerEntry].flags = XREF_PROBE_F_STOP_RETURN;
  plan.probes[kInnerRet].flags = XREF_PROBE_F_STOP_RETURN;
  Machine m(plan);
  m.hit(kStartEntry, 0x1000).hit(kInnerEntry, 0x0f00).hit(kInnerEntry, 0x0e00).hit(kInnerRet, 0x0e00).hit(kInnerRet,
                                                                                                            0x0f00);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f1", "1 3 return 2 f1",
                                "1 4 return 1 f1", "1 5 end 0 status=1"}));
}

}  // namespace
}  // namespace xref

namespace xref {
namespace {

// Tail jumps and the roles of one address: the plan is built role by role,
// as trace_plan.cpp chains them (head first, `next` after).
class RolePlan {
 public:
  // Adds a role; `after` chains it behind that role at the same address.
  uint32_t add(uint32_t function, uint8_t kind, bool start = false, uint8_t flags = 0,
               std::optional<uint32_t> after = std::nullopt) {
    PlannedProbe role = probe(function, kind, start, flags);
    const auto index = static_cast<uint32_t>(plan.probes.size());
    if (after) {
      role.head = false;
      role.next = plan.probes[*after].next;
      plan.probes[*after].next = static_cast<int32_t>(index);
    }
    plan.probes.push_back(role);
    return index;
  }
  TracePlan plan;
};

TEST(WindowMachineTail, AThunksEntryAndTailJumpAreOneAddress) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t start_ret = roles.add(0, XREF_PROBE_RET);
  const uint32_t thunk = roles.add(1, XREF_PROBE_ENTRY);
  const uint32_t thunk_jump = roles.add(1, XREF_PROBE_TAIL_EXIT, false, 0, thunk);
  roles.plan.probes[thunk_jump].tail_target_id = 2;
  const uint32_t target = roles.add(2, XREF_PROBE_ENTRY);
  const uint32_t target_ret = roles.add(2, XREF_PROBE_RET);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(thunk, 0x0f00).hit(target, 0x0f00).hit(target_ret, 0x0f00).hit(start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 tail_exit 1 f1", "1 3 entry 1 f2 tail",
                                "1 4 return 1 f2", "1 5 return 0 f0", "1 6 end 0 status=1"}));
}

TEST(WindowMachineTail, AStartThatIsAThunkOpensAndHandsOnItsFrame) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t jump = roles.add(0, XREF_PROBE_TAIL_EXIT, false, 0, start);
  roles.plan.probes[jump].tail_target_id = 1;
  const uint32_t target_ret = roles.add(1, XREF_PROBE_RET, false, XREF_PROBE_F_CONTINUATION);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(target_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 tail_exit 0 f0", "1 2 end 0 status=1 in f1"}));
}

// f -> jmp h (untraced), h calls g twice: the start frame is h's until h
// returns, so both g calls are inside the window, one level down.
TEST(WindowMachineTail, TheStartFrameLastsUntilItsTailTargetReturns) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t jump = roles.add(0, XREF_PROBE_TAIL_EXIT);
  roles.plan.probes[jump].tail_target_id = 2;
  const uint32_t g = roles.add(1, XREF_PROBE_ENTRY);
  const uint32_t g_ret = roles.add(1, XREF_PROBE_RET);
  const uint32_t h_ret = roles.add(2, XREF_PROBE_RET, false, XREF_PROBE_F_CONTINUATION);
  Machine m(roles.plan);
  m.hit(start, 0x1000)
      .hit(jump, 0x1000)
      .hit(h_ret, 0x0e00)  // h called from elsewhere deeper: not this frame
      .hit(g, 0x0f00)
      .hit(g_ret, 0x0f00)
      .hit(g, 0x0f00)
      .hit(g_ret, 0x0f00)
      .hit(h_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 tail_exit 0 f0", "1 2 entry 1 f1", "1 3 return 1 f1",
                                "1 4 entry 1 f1", "1 5 return 1 f1", "1 6 end 0 status=1 in f2"}));
}

TEST(WindowMachineTail, AnUnobservedEndIsInferredFromTheNextStart) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t jump = roles.add(0, XREF_PROBE_TAIL_EXIT);  // to code the plan cannot follow
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(jump, 0x1000).hit(start, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 tail_exit 0 f0", "1 2 end 0 status=1 inferred",
                                "2 0 entry 0 f0 begin"}));
}

// setGenericCommand -> X (traced call) -> addReply (unseen call) -> jmp T:
// the tail edge belongs one level below X, and X's return is still X's.
TEST(WindowMachineTail, ATailJumpFromAnUnseenFrameGetsAFrameOfItsOwn) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t start_ret = roles.add(0, XREF_PROBE_RET);
  const uint32_t call_x = roles.add(1, XREF_PROBE_CALL_SITE);
  const uint32_t x_returns = roles.add(1, XREF_PROBE_RETURN_SITE);
  const uint32_t tail_t = roles.add(2, XREF_PROBE_TAIL_SITE);
  Machine m(roles.plan);
  m.hit(start, 0x1000)
      .hit(call_x, 0x0f08)     // X's frame: 0x0f00
      .hit(tail_t, 0x0e00)     // addReply's frame (0x0e00) was never seen
      .hit(x_returns, 0x0f08)
      .hit(start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f2 tail",
                                "1 3 return 2 f2 inferred", "1 4 return 1 f1", "1 5 return 0 f0",
                                "1 6 end 0 status=1"}));
}

// A return site names the frame's function as it is now: the callee, or
// what it tail-jumped to.
TEST(WindowMachineTail, AReturnSiteNamesTheFunctionThatReturned) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t start_ret = roles.add(0, XREF_PROBE_RET);
  const uint32_t call_u = roles.add(1, XREF_PROBE_CALL_SITE);
  const uint32_t u_returns = roles.add(1, XREF_PROBE_RETURN_SITE);
  const uint32_t u_tail = roles.add(2, XREF_PROBE_TAIL_SITE);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(call_u, 0x0f08).hit(u_tail, 0x0f00).hit(u_returns, 0x0f08).hit(start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 1 f2 tail", "1 3 return 1 f2",
                                "1 4 return 0 f0", "1 5 end 0 status=1"}));
}

// A root whose first instruction is a call: its entry, then the call.
TEST(WindowMachineTail, AnEntryThatIsAlsoACallSite) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  roles.add(1, XREF_PROBE_CALL_SITE, false, 0, start);
  const uint32_t returns = roles.add(1, XREF_PROBE_RETURN_SITE);
  const uint32_t start_ret = roles.add(0, XREF_PROBE_RET);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(returns, 0x1000).hit(start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1", "1 3 return 0 f0",
                                "1 4 end 0 status=1"}));
}

// __cxa_begin_catch in the start function's caller: the exception has left
// the start frame, and the window ends unwound then, not at the next start.
TEST(WindowMachineTail, ACatchAboveTheStartFrameEndsItUnwound) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t inner = roles.add(1, XREF_PROBE_ENTRY);
  const uint32_t catch_check = roles.add(XREF_FUNCTION_NONE, XREF_PROBE_UNWIND_CHECK);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(inner, 0x0f00).hit(catch_check, 0x0e00).hit(catch_check, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 unwound 1 f1", "1 3 unwound 0 f0",
                                "1 4 end 0 status=3"}));
}

// In call-site mode the handler's own call to __cxa_begin_catch was just
// pushed at the same sp: it is not unwound.
TEST(WindowMachineTail, TheHandlersOwnCallIsNotUnwound) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true);
  const uint32_t call_catch = roles.add(1, XREF_PROBE_CALL_SITE);
  const uint32_t catch_check = roles.add(XREF_FUNCTION_NONE, XREF_PROBE_UNWIND_CHECK);
  const uint32_t catch_returns = roles.add(1, XREF_PROBE_RETURN_SITE);
  Machine m(roles.plan);
  m.hit(start, 0x1000).hit(call_catch, 0x0f08).hit(catch_check, 0x0f00).hit(catch_returns, 0x0f08);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1"}));
}

// Frames that end where no probe sees them (issue 23): sqlite3_mutex_leave
// ends in `jmp *0x90(%rax)`, ngx_palloc in `jmp ngx_palloc_large`.
class UnseenEnds {
 public:
  UnseenEnds() {
    start = roles.add(0, XREF_PROBE_ENTRY, true);
    start_ret = roles.add(0, XREF_PROBE_RET);
    leave = roles.add(1, XREF_PROBE_ENTRY, false, XREF_PROBE_F_UNSEEN_EXIT);  // only a pointer jump leaves it
    other = roles.add(2, XREF_PROBE_ENTRY);
    other_ret = roles.add(2, XREF_PROBE_RET);
    palloc = roles.add(3, XREF_PROBE_ENTRY);
    palloc_ret = roles.add(3, XREF_PROBE_RET);
    palloc_jump = roles.add(3, XREF_PROBE_TAIL_EXIT);  // to its untraced large-allocation helper
    catch_check = roles.add(XREF_FUNCTION_NONE, XREF_PROBE_UNWIND_CHECK);
    resume = roles.add(XREF_FUNCTION_NONE, XREF_PROBE_RESUME);  // the instruction after the caller's call to leave
  }
  RolePlan roles;
  uint32_t start, start_ret, leave, other, other_ret, palloc, palloc_ret, palloc_jump, catch_check, resume;
};

// The caller calls leave twice from one sp: the second call's entry reuses
// the first's frame, which returned unseen.
TEST(WindowMachineUnseen, AnEntryReusingTheSlotOfAFrameLeftByAPointerEndsItInferred) {
  for (Stack stack : {Stack::at_sp, Stack::readable}) {
    UnseenEnds plan;
    Machine m(plan.roles.plan, {}, stack);
    m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
    m.write(0x0f00, 0xb1).hit(plan.leave, 0x0f00);
    m.write(0x0f00, 0xb2).hit(plan.leave, 0x0f00);
    m.write(0x0f00, 0xb3).hit(plan.other, 0x0f00).hit(plan.other_ret, 0x0f00).hit(plan.start_ret, 0x1000);
    EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1 inferred",
                                  "1 3 entry 1 f1", "1 4 return 1 f1 inferred", "1 5 entry 1 f2", "1 6 return 1 f2",
                                  "1 7 return 0 f0", "1 8 end 0 status=1"}));
  }
}

// The caller calls leave, then an untraced function from the same sp, which
// calls a traced one deeper down: leave's slot now holds another return
// address, so leave is over, and the depth stays true. Only where the word
// can be read at the hit (BPF); tracefs records the word at the hit's own sp
// only, and the deeper entry nests under the frame it cannot prove over.
TEST(WindowMachineUnseen, ADeeperEntryEndsAFrameWhoseSlotHoldsAnotherReturnAddress) {
  for (Stack stack : {Stack::at_sp, Stack::readable}) {
    UnseenEnds plan;
    Machine m(plan.roles.plan, {}, stack);
    m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
    m.write(0x0f00, 0xb1).hit(plan.leave, 0x0f00);
    m.write(0x0f00, 0xb9);  // the untraced call
    m.write(0x0e00, 0xc1).hit(plan.other, 0x0e00).hit(plan.other_ret, 0x0e00).hit(plan.start_ret, 0x1000);
    if (stack == Stack::readable) {
      EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1 inferred",
                                    "1 3 entry 1 f2", "1 4 return 1 f2", "1 5 return 0 f0", "1 6 end 0 status=1"}));
    } else {
      EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f2", "1 3 return 2 f2",
                                    "1 4 return 1 f1 inferred", "1 5 return 0 f0", "1 6 end 0 status=1"}));
    }
  }
}

// While its slot still holds its return address the frame may be running
// the pointer's target, which calls: a deeper entry nests.
TEST(WindowMachineUnseen, AFrameWhoseSlotIsUnchangedLivesOn) {
  UnseenEnds plan;
  Machine m(plan.roles.plan, {}, Stack::readable);
  m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
  m.write(0x0f00, 0xb1).hit(plan.leave, 0x0f00);
  m.write(0x0e00, 0xc1).hit(plan.other, 0x0e00).hit(plan.other_ret, 0x0e00).hit(plan.start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f2", "1 3 return 2 f2",
                                "1 4 return 1 f1 inferred", "1 5 return 0 f0", "1 6 end 0 status=1"}));
}

// The caller runs again after its call to leave (the return site's probe,
// at leave's sp + 8): leave is over, though its slot still holds its return
// address (code that ran later below it never wrote that word, as after
// sqlite3Malloc's sqlite3_mutex_leave), and a deeper entry does not nest
// under it. A return site's probe from deeper down (the pointer's target
// running that caller's code again) leaves leave's frame open.
TEST(WindowMachineUnseen, TheCallersReturnSiteEndsAFrameLeftThroughAPointerWhoseSlotIsUnchanged) {
  const std::pair<uint64_t, Lines> cases[] = {
      {0x0f08, {"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 return 1 f1 inferred", "1 3 entry 1 f2",
                "1 4 return 1 f2", "1 5 return 0 f0", "1 6 end 0 status=1"}},
      {0x0e08, {"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 entry 2 f2", "1 3 return 2 f2",
                "1 4 return 1 f1 inferred", "1 5 return 0 f0", "1 6 end 0 status=1"}},
  };
  for (const auto& [resume_sp, expected] : cases) {
    UnseenEnds plan;
    Machine m(plan.roles.plan, {}, Stack::at_sp);  // no stack read needed: tracefs too
    m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
    m.write(0x0f00, 0xb1).hit(plan.leave, 0x0f00).hit(plan.resume, resume_sp);
    m.write(0x0e00, 0xc1).hit(plan.other, 0x0e00).hit(plan.other_ret, 0x0e00).hit(plan.start_ret, 0x1000);
    EXPECT_EQ(m.records(), expected) << "resume at sp " << std::hex << resume_sp;
  }
}

// palloc jumps to its untraced helper, which returns; a later call reaches
// palloc at the same sp through another caller's jump: the word at sp is
// not the return address of the frame that jumped, so this is a new call,
// not the tail jump's continuation.
TEST(WindowMachineUnseen, AnEntryAtATailedFramesSpWithAnotherReturnAddressIsANewCall) {
  for (Stack stack : {Stack::at_sp, Stack::readable}) {
    UnseenEnds plan;
    Machine m(plan.roles.plan, {}, stack);
    m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
    m.write(0x0f00, 0xb1).hit(plan.palloc, 0x0f00).hit(plan.palloc_jump, 0x0f00);
    m.write(0x0f00, 0xb2).hit(plan.palloc, 0x0f00).hit(plan.palloc_ret, 0x0f00).hit(plan.start_ret, 0x1000);
    EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f3", "1 2 tail_exit 1 f3", "1 3 entry 1 f3",
                                  "1 4 return 1 f3", "1 5 return 0 f0", "1 6 end 0 status=1"}));
  }
}

// The same return address at the same sp: the jump's target jumped on into
// palloc (mutual tail recursion), the frame continues.
TEST(WindowMachineUnseen, AnEntryAtATailedFramesSpWithItsReturnAddressContinuesIt) {
  UnseenEnds plan;
  Machine m(plan.roles.plan);
  m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
  m.write(0x0f00, 0xb1).hit(plan.palloc, 0x0f00).hit(plan.palloc_jump, 0x0f00).hit(plan.palloc, 0x0f00);
  m.hit(plan.palloc_ret, 0x0f00).hit(plan.start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f3", "1 2 tail_exit 1 f3", "1 3 entry 1 f3 tail",
                                "1 4 return 1 f3", "1 5 return 0 f0", "1 6 end 0 status=1"}));
}

// A start function that leaves through a pointer: the next start ends its
// window complete, the end inferred (not truncated).
TEST(WindowMachineUnseen, AStartLeftThroughAPointerEndsInferredAtTheNextStart) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true, XREF_PROBE_F_UNSEEN_EXIT);
  Machine m(roles.plan);
  m.write(0x1000, 0xa0).hit(start, 0x1000).write(0x1000, 0xa1).hit(start, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 return 0 f0 inferred", "1 2 end 0 status=1 inferred",
                                "2 0 entry 0 f0 begin"}));
}

// A start left through a pointer, then called again deeper from untraced
// code: not recursion, a new window (where the word can be read).
TEST(WindowMachineUnseen, AStartCalledAgainBelowItsOverFrameOpensANewWindow) {
  RolePlan roles;
  const uint32_t start = roles.add(0, XREF_PROBE_ENTRY, true, XREF_PROBE_F_UNSEEN_EXIT);
  Machine m(roles.plan, {}, Stack::readable);
  m.write(0x1000, 0xa0).hit(start, 0x1000).write(0x1000, 0xa1).write(0x0f00, 0xb1).hit(start, 0x0f00);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 return 0 f0 inferred", "1 2 end 0 status=1 inferred",
                                "2 0 entry 0 f0 begin"}));
}

// An exception handler's probe finds such a frame over: unwound, as any.
TEST(WindowMachineUnseen, ACatchUnwindsAFrameThatCouldLeaveThroughAPointer) {
  UnseenEnds plan;
  Machine m(plan.roles.plan);
  m.write(0x1000, 0xa0).hit(plan.start, 0x1000);
  m.write(0x0f00, 0xb1).hit(plan.leave, 0x0f00).hit(plan.catch_check, 0x0f80).hit(plan.start_ret, 0x1000);
  EXPECT_EQ(m.records(), (Lines{"1 0 entry 0 f0 begin", "1 1 entry 1 f1", "1 2 unwound 1 f1", "1 3 return 0 f0",
                                "1 4 end 0 status=1"}));
}

}  // namespace
}  // namespace xref
