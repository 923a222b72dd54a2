// A trace window as it goes out: the window object of the live_trace JSON
// (docs/json.md; the same bytes in --json, --jsonl and serve's window
// events), written straight into a reusable buffer; its text is rendered
// from this JSON (render/window_text.h). What depends only on the plan (names, static and live
// VAs, probe sites, fetch names) is spelled once, when the format is made;
// a call site is symbolized once per return address, an indirect call's
// target once per address. Every VA shown is a static VA, so output from
// different runs of one build compares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mark/follower.h"
#include "output/json_writer.h"
#include "process/symbolizer.h"
#include "process/target.h"
#include "trace/plan.h"
#include "trace/windows.h"

namespace xref {

struct TraceRun;

class WindowFormat {
 public:
  WindowFormat(const Target& target, const TracePlan& plan);
  // --mark-file: windows are stamped from this follower (null: no marks).
  void set_marks(MarkFollower* marks) { marks_ = marks; }

  // The window object, appended to `out`. `run` is null while the trace
  // goes on (a window that closed), set at the end (the windows left).
  void append_json(std::string& out, const TraceWindow& window, const TraceRun* run);

  // "complete", "incomplete", "truncated", "unwound", "open_at_stop", "target_exited".
  static std::string_view status(const TraceWindow& window, bool target_exited);
  // Some event may be missing: counted loss, or no end record in a run that lost events.
  static bool possible_loss(const TraceWindow& window, const TraceRun* run);

 private:
  struct FetchName {
    std::string name;
    std::string name_json;  // "\"n\""
    std::string type_json;  // "\"u64\""
    bool is_signed = false;
    bool is_string = false;   // a :string fetch: written as probe writes one (attach/fetched_value.h)
  };
  struct ProbeText {
    std::string fields_json;  // "probe_live":...,"probe_va":... (no braces)
    std::vector<FetchName> fetches;
    int target_fetch = -1;    // the fetch named "target", if any
    bool call_site = false;   // the probe is the call (or jump) instruction
  };
  struct FunctionText {
    std::string symbol_json;
    std::string target_live_json;  // "\"0x55...\"", "" when not shown
    std::string module;       // "" inside the executable
    std::string module_json;
    std::string implementation_json;
  };
  // An entry's call site, as the JSON spells it.
  struct CallSiteText {
    std::string fields_json;  // "call_site_live":... through "caller_va":...
  };
  struct IndirectTarget {
    uint64_t static_va = 0;
    std::string name;
  };
  // What a window's events need beyond the event itself.
  struct EventContext {
    const IndirectTarget* indirect = nullptr;
    std::optional<uint64_t> indirect_live;
  };

  std::optional<uint64_t> live_of(uint32_t module_index, uint64_t static_va) const;
  const CallSiteText& entry_call_site(const TraceEvent& event);
  const IndirectTarget* indirect_target(const TraceWindow& window, const TraceEvent& event);
  // The live value of the event's first fetch named "target" that was read.
  std::optional<uint64_t> target_fetch(const TraceWindow& window, const TraceEvent& event, bool last) const;
  // The indirect target of each event of `window`, in order (see IndirectFrames in the .cpp).
  void resolve_indirect(const TraceWindow& window);
  void append_event_json(JsonWriter& json, const TraceWindow& window, const TraceEvent& event,
                         const EventContext& context);
  void append_fetches_json(JsonWriter& json, const TraceWindow& window, const TraceEvent& event);
  void append_mark_json(JsonWriter& json, const TraceWindow& window);
  std::string ended_in(const TraceWindow& window) const;
  const FunctionText* function(uint32_t function_id) const {
    return function_id < functions_.size() ? &functions_[function_id] : nullptr;
  }
  const ProbeText* probe(uint32_t probe_index) const {
    return probe_index < probes_.size() ? &probes_[probe_index] : nullptr;
  }

  const Target& target_;
  const TracePlan& plan_;
  bool has_indirect_ = false;  // some traced function is an indirect call's callee
  MarkFollower* marks_ = nullptr;
  Symbolizer symbolizer_;
  std::vector<FunctionText> functions_;
  std::vector<ProbeText> probes_;
  std::string start_va_, stop_va_, start_module_;
  std::unordered_map<uint64_t, CallSiteText> call_sites_;      // by live return address
  std::unordered_map<uint64_t, IndirectTarget> indirect_names_;  // by live target
  std::vector<EventContext> contexts_;                          // per event of the window being written
};

// "entry", "return", "tail_exit", "unwound", "stop"; "unknown" otherwise.
std::string_view event_kind_name(uint8_t type);

}  // namespace xref
