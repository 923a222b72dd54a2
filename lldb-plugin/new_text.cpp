#include "new_text.h"

#include "lldb_symbols.h"
#include "probe_render.h"
#include "stop_signal.h"
#include "window_render.h"

namespace xref::lldb_plugin {

NewText PluginState::claim_new_text(std::optional<uint64_t> pid, size_t window_limit, bool probe_changes) {
  NewText text;
  absorb_events(text.lines);
  text.lines.insert(text.lines.begin(), pending_lines_.begin(), pending_lines_.end());
  pending_lines_.clear();
  text.restores = std::move(pending_restores_);
  pending_restores_.clear();
  for (auto& [id, session] : sessions_) {
    if (pid && session.pid != *pid) continue;
    if (probe_changes && session.command == "probe" && session.changes.is_object()) {
      text.probes.push_back({id, session.target, std::move(session.changes), session.probe_addresses});
      session.changes = nullptr;
    }
  }
  for (auto& [session, record] : unshown_windows(std::nullopt)) {
    if (pid && session->pid != *pid) continue;
    if (text.windows.size() == window_limit) {
      ++text.more_windows;
      continue;
    }
    text.windows.push_back({session->id, session->target, record->window});
    record->shown = true;
  }
  for (auto& [id, session] : sessions_) {
    if ((pid && session.pid != *pid) || !session.ended || session.end_shown) continue;
    text.end_lines.push_back(session_end_line(session));
    session.end_shown = true;
  }
  return text;
}

Lines render_new_text(NewText text) {
  Lines lines = std::move(text.lines);
  apply_restores(std::move(text.restores), lines);
  restore_stop_signals(lines);
  for (const auto& probe : text.probes) {
    LldbSymbols symbols(probe.target);
    for (auto& line : render_probe_changes(probe.changes, probe.addresses, probe.session, symbols)) {
      lines.push_back(std::move(line));
    }
  }
  for (const auto& claimed : text.windows) {
    LldbSymbols symbols(claimed.target);
    for (auto& line : render_window(claimed.window, claimed.session, symbols)) lines.push_back(std::move(line));
  }
  if (text.more_windows > 0) {
    lines.push_back("xref: " + std::to_string(text.more_windows) + " more new windows: `xref show` prints them");
  }
  lines.insert(lines.end(), text.end_lines.begin(), text.end_lines.end());
  return lines;
}

}  // namespace xref::lldb_plugin
