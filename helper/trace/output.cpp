#include "trace/output.h"

#include <set>

#include "hex.h"
#include "output/json_envelope.h"
#include "render/process_name.h"
#include "render/session_text.h"

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

void TraceRenderer::append_text(std::string& out, const TraceWindow& window, const TraceRun* run) {
  // One writer of window text for every shape and place: the window's JSON,
  // read back, is what the renderer reads (as it does in serve and trace show).
  scratch_.clear();
  windows_.append_json(scratch_, window, run);
  const nlohmann::json parsed = nlohmann::json::parse(scratch_, nullptr, false);
  for (const std::string& line : render::window_lines(parsed, names_, style_)) {
    out += line;
    out += '\n';
  }
}

void TraceRenderer::print_header(std::ostream& out, const std::string& backend) const {
  // For people: the process by name, then how its code was read and where
  // it is loaded, then the probes; every fact of the JSON header kept.
  const ProcessIdentity& identity = target_.process.identity();
  const std::string& match = target_.binary_match;
  out << "tracing " << render::process_name(identity.comm, identity.exe_path) << " (pid " << target_.process.pid() << "): " << plan_.probes.size()
      << " probes, " << plan_.entry_nop_probes.size() << " on 5-byte nops; backend " << backend << "; returns by "
      << plan_.return_mode << "\n";
  out << "executable " << identity.exe_path << " ("
      << (match == "proc_exe_auto"    ? "read from the process"
          : match == "build_id_match" ? "--bin, same build-id"
          : match == "digest_match"   ? "--bin, same SHA-256"
                                      : match)
      << "), loaded at slide +" << to_hex(slide()) << "\n";
  for (const std::string& warning : warnings()) out << "warning: " << warning << "\n";
  for (const auto& [pattern, matched] : plan_.globs) out << pattern << ": " << matched << " functions matched\n";
  if (marks_ != nullptr) {
    out << "mark file " << marks_->path() << ", clock " << marks_->clock_name();
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
      {"heartbeats_not_shown", run.heartbeats_not_shown},
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
  for (const std::string& line : render::trace_summary_lines(summary_json(run))) out << line << "\n";
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
