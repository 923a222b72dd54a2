// Rendering trace windows: the text shape (docs/trace.md), the live_trace
// JSON document (schema_version 1) and JSON lines. Every VA shown is a
// static VA, so output from different runs of one build compares.
#pragma once

#include <optional>
#include <utility>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "mark/follower.h"
#include "process/symbolizer.h"
#include "process/target.h"
#include "trace/plan.h"
#include "trace/session.h"
#include "trace/windows.h"

namespace xref {

class TraceRenderer {
 public:
  TraceRenderer(const Target& target, const TracePlan& plan)
      : target_(target), plan_(plan), symbolizer_(target.space, plan.module) {}
  // --mark-file: windows are stamped from this follower (null: no marks).
  void set_marks(MarkFollower* marks) { marks_ = marks; }

  std::string status(const TraceWindow& window, bool target_exited) const;
  bool possible_loss(const TraceWindow& window, const TraceRun* run) const;
  nlohmann::json window_json(const TraceWindow& window, const TraceRun* run);
  void print_window(std::ostream& out, const TraceWindow& window, const TraceRun* run);
  void print_header(std::ostream& out, const std::string& backend) const;
  nlohmann::json summary_json(const TraceRun& run) const;
  // What the trace could see, for `xref trace show --tree`: the executable's
  // probed call sites (call-site modes) and the functions probed at entry.
  nlohmann::json traced_json() const;
  void print_summary(std::ostream& out, const TraceRun& run) const;
  nlohmann::json process_json_after(const TraceRun& run) const;
  nlohmann::json document(const TraceRun& run);

 private:
  CallSiteInfo entry_call_site(const TraceEvent& event);
  std::optional<std::pair<uint64_t, std::string>> indirect_target(const TraceEvent& event);
  const std::string& function_name(uint32_t function_id) const;
  // "libc.so.6:" for a function outside the executable, "" inside it.
  std::string module_prefix(uint32_t function_id) const;
  uint64_t function_start(uint32_t function_id) const;
  // The warnings of --bin (target) and of the plan, for the header and the JSON.
  std::vector<std::string> warnings() const;
  // A static VA of plan module `module_index` in the process; nullopt if unmapped.
  std::optional<uint64_t> live_of(uint32_t module_index, uint64_t static_va) const;
  uint64_t slide() const;

  std::optional<MarkStamp> mark_of(const TraceWindow& window) const;

  const Target& target_;
  const TracePlan& plan_;
  MarkFollower* marks_ = nullptr;
  Symbolizer symbolizer_;
};

std::string event_kind_name(uint8_t type);

}  // namespace xref
