// Rendering a trace: its header, summary and the live_trace JSON document
// (schema_version 1) around the windows, which window_format.h writes.
// Every VA shown is a static VA, so output from different runs of one
// build compares.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "mark/follower.h"
#include "render/helper_names.h"
#include "render/window_text.h"
#include "process/target.h"
#include "trace/plan.h"
#include "trace/session.h"
#include "trace/window_format.h"
#include "trace/windows.h"

namespace xref {

class TraceRenderer {
 public:
  // Names the start at once, while the process runs (its executable's
  // symbols and lines are then read): a window may be written after it exited.
  TraceRenderer(const Target& target, const TracePlan& plan)
      : target_(target), plan_(plan), windows_(target, plan), names_(target.space) {
    names_.place({"", plan.start_va, std::nullopt});
  }
  // --mark-file: windows are stamped from this follower (null: no marks).
  void set_marks(MarkFollower* marks) {
    marks_ = marks;
    windows_.set_marks(marks);
  }

  WindowFormat& windows() { return windows_; }
  // --addresses: each event line shows its static VAs.
  void set_addresses(bool addresses) { style_.addresses = addresses; }
  // The text of one window (render/window_text.h), named with the helper's
  // own symbols and lines; lines end in '\n'.
  void append_text(std::string& out, const TraceWindow& window, const TraceRun* run);
  // One --jsonl line: {"type":"window","window":{...}} and its newline.
  void append_jsonl_window(std::string& out, const TraceWindow& window, const TraceRun* run);
  void print_header(std::ostream& out, const std::string& backend) const;
  nlohmann::json summary_json(const TraceRun& run) const;
  // What the trace could see, for `xref trace show --tree`: the executable's
  // probed call sites (call-site modes) and the functions probed at entry.
  nlohmann::json traced_json() const;
  void print_summary(std::ostream& out, const TraceRun& run) const;
  // The target's identity rechecked now, with the slide and the warnings.
  nlohmann::json process_json_after() const;
  // The --json document's members (TraceStream writes "windows" between them):
  // those known once the probes are in, and those known at the end; `run`
  // is null when the run failed.
  nlohmann::json document_head(const std::string& backend) const;
  // --functions globs: [{"pattern", "matched"}], empty without any.
  nlohmann::json globs_json() const;
  nlohmann::json document_tail(const TraceRun* run, const std::optional<Error>& error) const;

 private:
  uint64_t function_start(uint32_t function_id) const;
  // The warnings of --bin (target) and of the plan, for the header and the JSON.
  std::vector<std::string> warnings() const;
  uint64_t slide() const;

  const Target& target_;
  const TracePlan& plan_;
  MarkFollower* marks_ = nullptr;
  WindowFormat windows_;
  render::HelperNames names_;
  render::WindowStyle style_;
  std::string scratch_;
};

}  // namespace xref
