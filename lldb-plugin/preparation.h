// What LLDB does before a session's probes go in, as the helper's `prepare`
// says (docs/protocol.md): breakpoints off (a uprobe and an int3 at one
// address do not mix: the uprobe swallows the int3, and LLDB, taking its
// int3 out after the uprobe went in, would write the original byte over
// the uprobe's), --stop-when's signal taken (stop_signal.h), and
// --stop-at-end's breakpoint. Undone when the session does not start;
// handed over to the session when it does.
#pragma once

#include <lldb/API/LLDB.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "frontend.h"

namespace xref::lldb_plugin {

class Preparation {
 public:
  Preparation(lldb::SBTarget target, nlohmann::json prepare) : target_(target), prepare_(std::move(prepare)) {}

  // Does it all; the `prepared` object for the helper, or the failure
  // (with everything undone).
  std::variant<nlohmann::json, std::string> run(Lines& lines);
  void undo(Lines& lines);
  // The session keeps off the breakpoints the helper put probes on; the
  // others come back at once.
  void hand_over(SessionRecord& session, const nlohmann::json& kept);
  // The helper's refusal, with a hint when it names --stop-at-end's breakpoint.
  std::string explain(std::string text) const;

 private:
  lldb::SBTarget target_;
  nlohmann::json prepare_;
  std::vector<lldb::break_id_t> disabled_;
  std::vector<lldb::break_id_t> quiet_;  // --here's: back without a word
  bool signal_taken_ = false;
  lldb::SBBreakpoint stop_at_end_;
};

}  // namespace xref::lldb_plugin
