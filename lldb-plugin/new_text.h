// What the plugin prints by itself, with no command asking: at a stop the
// stop hook did not see (stop_listener.h) and when a session's process
// exits. Claimed under the state's lock, where no LLDB call is made (see
// plugin_state.h), and rendered after it with LLDB's symbols.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "plugin_state.h"

namespace xref::lldb_plugin {

struct NewText {
  struct Window {
    uint64_t session = 0;
    lldb::SBTarget target;
    nlohmann::json window;
  };
  struct ProbeChanges {
    uint64_t session = 0;
    lldb::SBTarget target;
    nlohmann::json changes;
    nlohmann::json addresses;
  };
  Lines lines;  // already text: warnings, lines absorbed earlier
  std::vector<BreakpointRestore> restores;
  std::vector<ProbeChanges> probes;
  std::vector<Window> windows;  // oldest first
  size_t more_windows = 0;      // new windows beyond the bound, left for `xref show`
  Lines end_lines;
};

// Renders what was claimed (PluginState::claim_new_text) and puts back the
// breakpoints of ended sessions: LLDB calls, outside the state's lock.
Lines render_new_text(NewText text);

}  // namespace xref::lldb_plugin
