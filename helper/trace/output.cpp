#include "trace/output.h"

#include <set>

#include "hex.h"
#include "output/json_envelope.h"
#include "trace/text.h"

namespace xref {
std::vector<std::string> TraceRenderer::warnings() const {
  std::vector<std::string> all = target_.warnings;
  all.insert(all.end(), plan_.warnings.begin(), plan_.warnings.end());
  return all;
}

uint64_t TraceRenderer::function_start(uint32_t function_id) const {
  return function_id < plan_.functions.size() ? plan_.functions[function_id].symbol.start : 0;
}

uint64_t TraceRenderer::slide() const {
  auto bias = target_.space.load_bias(*plan_.module);
  return bias ? *bias : 0;
}

void TraceRenderer::append_jsonl_window(std::string& out, const TraceWindow& window, const TraceRun* run) {
  // As json_text() writes {"type": "window", "window": {...}}: keys sorted.
  out += "{\"type\":\"window\",\"window\":";
  windows_.append_json(out, window, run);
  out += "}\n";
}

void TraceRenderer::print_header(std::ostream& out, const std::string& backend) const {
  out << "pid " << target_.process.pid() << "  match " << target_.binary_match << "  slide +" << to_hex(slide())
      << "  backend " << backend << "  return_mode " << plan_.return_mode << "\n";
  for (const std::string& warning : warnings()) out << "warning: " << warning << "\n";
  for (const auto& [pattern, matched] : plan_.globs) out << pattern << ": " << matched << " functions matched\n";
  out << "probes " << plan_.probes.size() << "  on 5-byte nops " << plan_.entry_nop_probes.size() << "\n";
  if (marks_ != nullptr) {
    out << "mark_file " << marks_->path() << "  clock " << marks_->clock_name();
    if (!marks_->untimed_reason().empty()) out << " (" << marks_->untimed_reason() << ")";
    out << "\n";
  }
}

nlohmann::json TraceRenderer::summary_json(const TraceRun& run) const {
  const WindowTally& released = run.windows->released();
  uint64_t complete = released.complete, events = released.events;
  for (const auto& [id, window] : run.windows->windows()) {
    events += window.events.size();
    if (WindowFormat::status(window, run.target_exited) == "complete" && !WindowFormat::possible_loss(window, &run)) {
      ++complete;
    }
  }
  const uint64_t windows = released.windows + run.windows->windows().size();
  nlohmann::json summary = {
      {"windows", windows},
      {"complete_windows", complete},
      {"incomplete_windows", windows - complete},
      {"events", events},
      {"lost", run.counters.lost_events},
      {"lost_events",
       {{"status", "known"},
        {"overrun", run.counters.overrun},
        {"commit_overrun", run.counters.commit_overrun},
        {"dropped_events", run.counters.dropped_events},
        {"perf_lost_records", 0},
        {"total", run.counters.lost_events}}},
      {"stop_reason", run.stop_reason},
      {"return_mode", plan_.return_mode},
      {"elapsed_ms", run.elapsed_ms},
      {"unparsed_events", run.windows->unparsed_events() + run.counters.unparsed_records},
      // Received, but past the bound of events held at once (their windows show the gap).
      {"events_not_kept", run.windows->events_not_kept()},
      {"excluded_other_tgid_events", run.counters.excluded_other_tgid_events},
      {"ambiguous_tid_events", run.counters.ambiguous_tid_events},
      {"windows_opened", run.counters.windows_opened},
      // Every record of these was lost, and their results too.
      {"windows_without_records", run.counters.windows_opened > windows ? run.counters.windows_opened - windows : 0},
      {"windows_not_shown", [&] {
         nlohmann::json reasons = nlohmann::json::object();
         for (const auto& [reason, count] : run.windows_not_shown) reasons[reason] = count;
         return reasons;
       }()},
      {"starts_filtered", run.counters.starts_filtered},
      {"starts_refused", run.counters.starts_refused},
      {"probes", plan_.probes.size()},
      {"unwind_checks", plan_.unwind_checks},
      {"nop5_probes", [&] {
         nlohmann::json list = nlohmann::json::array();
         for (uint64_t va : plan_.entry_nop_probes) list.push_back(to_hex(va));
         return list;
       }()},
  };
  summary["traced"] = traced_json();
  if (!run.backend_details.empty()) {
    nlohmann::json details = nlohmann::json::object();
    for (const auto& [key, value] : run.backend_details) details[key] = value;
    summary["backend_details"] = details;
  }
  if (marks_ != nullptr) {
    summary["mark_file"] = {{"path", marks_->path()}, {"clock", marks_->clock_name()}};
    if (!marks_->untimed_reason().empty()) summary["mark_file"]["untimed_reason"] = marks_->untimed_reason();
  }
  return summary;
}

nlohmann::json TraceRenderer::traced_json() const {
  std::set<uint64_t> call_sites, functions;
  for (const PlannedProbe& probe : plan_.probes) {
    if (probe.module_index != 0) continue;
    if (probe.kind == XREF_PROBE_CALL_SITE || probe.kind == XREF_PROBE_TAIL_SITE) call_sites.insert(probe.static_va);
    if (probe.kind == XREF_PROBE_ENTRY) functions.insert(function_start(probe.function_id));
  }
  auto hex_list = [](const std::set<uint64_t>& vas) {
    nlohmann::json list = nlohmann::json::array();
    for (uint64_t va : vas) list.push_back(to_hex(va));
    return list;
  };
  return {{"mode", plan_.mode}, {"call_sites", hex_list(call_sites)}, {"functions", hex_list(functions)}};
}

void TraceRenderer::print_summary(std::ostream& out, const TraceRun& run) const {
  const nlohmann::json summary = summary_json(run);
  out << "summary: windows=" << summary["windows"].get<uint64_t>()
      << " complete=" << summary["complete_windows"].get<uint64_t>()
      << " events=" << summary["events"].get<uint64_t>() << " lost=" << run.counters.lost_events
      << " stop=" << run.stop_reason << " elapsed_ms=" << run.elapsed_ms << "\n";
  // Every window opened is printed above or counted here, with the reason.
  static constexpr std::pair<const char*, const char*> kReasons[] = {
      {"all_events_lost", "every event was lost (the ring buffer was full)"},
      {"output_stalled", "the output's reader fell behind; lost, not waited for"},
  };
  for (const auto& [reason, why] : kReasons) {
    auto found = run.windows_not_shown.find(reason);
    if (found != run.windows_not_shown.end() && found->second > 0) {
      out << "not shown: " << found->second << " window" << (found->second == 1 ? "" : "s") << ": " << why << "\n";
    }
  }
  if (const uint64_t refused = run.counters.starts_refused; refused > 0) {
    out << "not traced: " << refused << " start call" << (refused == 1 ? "" : "s") << ": "
        << XREF_TRACE_MAX_THREADS << " threads already had a window open\n";
  }
  if (const uint64_t none = summary["windows_without_records"].get<uint64_t>(); none > 0) {
    out << "not shown: " << none << " window" << (none == 1 ? "" : "s")
        << ": every record was lost, the ring buffer being full\n";
  }
}

nlohmann::json TraceRenderer::process_json_after() const {
  nlohmann::json process = xref::process_json_after(target_);
  process["pie_slide"] = to_hex(slide());
  process["warnings"] = warnings();
  return process;
}

nlohmann::json TraceRenderer::document_head(const std::string& backend) const {
  nlohmann::json head = {
      {"schema_version", kSchemaVersion},
      {"tool", "xref"},
      {"tool_version", XREF_VERSION},
      {"operation", "live_trace"},
      {"backend", backend},
  };
  if (!plan_.globs.empty()) head["globs"] = globs_json();
  return head;
}

nlohmann::json TraceRenderer::globs_json() const {
  nlohmann::json globs = nlohmann::json::array();
  for (const auto& [pattern, matched] : plan_.globs) globs.push_back({{"pattern", pattern}, {"matched", matched}});
  return globs;
}

nlohmann::json TraceRenderer::document_tail(const TraceRun* run, const std::optional<Error>& error) const {
  return {
      {"process", process_json_after()},
      {"summary", run != nullptr ? summary_json(*run) : nlohmann::json(nullptr)},
      {"error", error ? error_json(*error) : nlohmann::json(nullptr)},
      {"warnings", warnings()},
      {"limits", nlohmann::json::object()},
      {"stops", run != nullptr ? nlohmann::json::array({run->stop_reason}) : nlohmann::json::array({"error"})},
  };
}

}  // namespace xref
