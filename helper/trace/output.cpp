#include "trace/output.h"

#include <set>

#include "hex.h"
#include "output/json_envelope.h"
#include "trace/text.h"

namespace xref {
namespace {

const std::string kUnknown = "?";

// Returns of an indirect call carry only the call site's placeholder; the
// target named at the entry is remembered per depth for them.
class IndirectFrames {
 public:
  using Target = std::optional<std::pair<uint64_t, std::string>>;
  Target target(const TraceEvent& event, Target at_entry) {
    if (event.type == XREF_EVENT_ENTRY) {
      if (frames_.size() <= event.depth) frames_.resize(event.depth + 1);
      frames_[event.depth] = at_entry;
      return at_entry;
    }
    if (event.type == XREF_EVENT_STOP || event.depth >= frames_.size()) return std::nullopt;
    Target known = frames_[event.depth];
    frames_[event.depth].reset();
    return known;
  }

 private:
  std::vector<Target> frames_;
};

}  // namespace

std::string event_kind_name(uint8_t type) {
  switch (type) {
    case XREF_EVENT_ENTRY: return "entry";
    case XREF_EVENT_RETURN: return "return";
    case XREF_EVENT_TAIL_EXIT: return "tail_exit";
    case XREF_EVENT_UNWOUND: return "unwound";
    case XREF_EVENT_STOP: return "stop";
  }
  return "unknown";
}

const std::string& TraceRenderer::function_name(uint32_t function_id) const {
  if (function_id < plan_.functions.size()) return plan_.functions[function_id].symbol.demangled;
  return kUnknown;
}

std::string TraceRenderer::module_prefix(uint32_t function_id) const {
  if (function_id >= plan_.functions.size()) return "";
  const uint32_t module = plan_.functions[function_id].module_index;
  return module == 0 ? "" : plan_.modules[module].module->name() + ":";
}

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

std::optional<uint64_t> TraceRenderer::live_of(uint32_t module_index, uint64_t static_va) const {
  if (module_index >= plan_.modules.size()) return std::nullopt;
  auto live = target_.space.live_from_static(*plan_.modules[module_index].module, static_va);
  return live ? std::optional<uint64_t>(*live) : std::nullopt;
}

CallSiteInfo TraceRenderer::entry_call_site(const TraceEvent& event) {
  if (event.probe_index < plan_.probes.size()) {
    const PlannedProbe& probe = plan_.probes[event.probe_index];
    if (probe.kind == XREF_PROBE_CALL_SITE || probe.kind == XREF_PROBE_TAIL_SITE) {
      // The probe is the call (or jump) instruction itself.
      CallSiteInfo info;
      info.known = true;
      info.verified = true;
      info.call_site_va = probe.static_va;
      info.call_site_live = live_of(probe.module_index, probe.static_va).value_or(0);
      const PlanModule& module = plan_.modules[probe.module_index];
      if (const FunctionSymbol* caller = module.image->function_containing(probe.static_va)) {
        info.caller_va = caller->start;
        info.caller = caller->demangled;
      }
      if (probe.module_index != 0) info.module = module.module->name();
      return info;
    }
  }
  return symbolizer_.call_site(event.return_address);
}

// An indirect call's target, named from the value fetched at the call.
std::optional<std::pair<uint64_t, std::string>> TraceRenderer::indirect_target(const TraceEvent& event) {
  if (event.function_id >= plan_.functions.size() || !plan_.functions[event.function_id].indirect) return std::nullopt;
  for (const FetchedValue& value : event.fetches) {
    if (value.name != "target" || !value.value) continue;
    auto named = symbolizer_.code_address(*value.value);
    if (!named) return std::make_pair(*value.value, std::string("?"));
    return std::make_pair(named->static_va, named->name());
  }
  return std::nullopt;
}

std::string TraceRenderer::status(const TraceWindow& window, bool target_exited) const {
  if (window.ended) {
    switch (window.end_status) {
      // A window that lost events is never complete.
      case XREF_WINDOW_COMPLETE: return window.has_loss() ? "incomplete" : "complete";
      case XREF_WINDOW_TRUNCATED: return "truncated";
      case XREF_WINDOW_UNWOUND: return "unwound";
    }
    return "unknown";
  }
  return target_exited ? "target_exited" : "open_at_stop";
}

// The window's lost events when they are counted; unknown when the backend
// only knows that loss happened while the window was open.
static std::optional<uint64_t> lost_count(const TraceWindow& window) {
  const uint64_t counted = std::max<uint64_t>(window.lost_reported, window.missing_events());
  if (counted == 0 && window.loss_unattributed) return std::nullopt;
  return counted;
}

bool TraceRenderer::possible_loss(const TraceWindow& window, const TraceRun* run) const {
  if (window.has_loss()) return true;
  // A window whose end record never came may have lost it.
  return !window.ended && run != nullptr && run->counters.lost_events > 0;
}

nlohmann::json TraceRenderer::window_json(const TraceWindow& window, const TraceRun* run) {
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json start_fetches = nlohmann::json::array();
  IndirectFrames indirect_frames;
  for (const TraceEvent& event : window.events) {
    nlohmann::json fetches = nlohmann::json::array();
    for (const FetchedValue& value : event.fetches) fetches.push_back(fetched_json(value));
    if (event.window_begin) start_fetches = fetches;
    nlohmann::json json = {
        {"seq", event.seq},
        {"kind", event_kind_name(event.type)},
        {"depth", event.depth},
        {"target_va", event.type == XREF_EVENT_STOP && plan_.stop_va ? to_hex(*plan_.stop_va)
                                                                     : to_hex(function_start(event.function_id))},
        {"symbol", event.type == XREF_EVENT_STOP ? "" : function_name(event.function_id)},
        {"tail_call", event.type == XREF_EVENT_TAIL_EXIT || event.tail},
        {"timestamp_ns", event.timestamp_ns},
        {"fetches", fetches},
    };
    // Live addresses too, for a debugger front end (and valid only in this process).
    if (event.type != XREF_EVENT_STOP && event.function_id < plan_.functions.size() &&
        !plan_.functions[event.function_id].indirect) {
      const TracedFunction& function = plan_.functions[event.function_id];
      if (auto live = live_of(function.module_index, function.symbol.start)) json["target_live"] = to_hex(*live);
    }
    if (event.probe_index < plan_.probes.size()) {
      const PlannedProbe& probe = plan_.probes[event.probe_index];
      json["probe_va"] = to_hex(probe.static_va);
      if (auto live = live_of(probe.module_index, probe.static_va)) json["probe_live"] = to_hex(*live);
    }
    if (const std::string prefix = module_prefix(event.function_id); !prefix.empty()) {
      json["module"] = prefix.substr(0, prefix.size() - 1);
    }
    if (event.type != XREF_EVENT_STOP && event.function_id < plan_.functions.size() &&
        !plan_.functions[event.function_id].implementation.empty()) {
      json["implementation"] = plan_.functions[event.function_id].implementation;
    }
    if (event.type == XREF_EVENT_ENTRY) {
      const CallSiteInfo site = entry_call_site(event);
      json["call_site_va"] = site.known ? nlohmann::json(to_hex(site.call_site_va)) : nlohmann::json(nullptr);
      json["call_site_verified"] = site.verified;
      json["caller_va"] = site.caller_va ? nlohmann::json(to_hex(site.caller_va)) : nlohmann::json(nullptr);
      if (!site.caller.empty()) json["caller"] = site.caller;
      if (!site.module.empty()) json["call_site_module"] = site.module;
      json["call_site_live"] = site.call_site_live ? nlohmann::json(to_hex(site.call_site_live)) : nlohmann::json(nullptr);
    }
    if (event.depth_overflow) json["depth_overflow"] = true;
    if (event.inferred) json["inferred"] = true;
    if (auto indirect = indirect_frames.target(event, indirect_target(event))) {
      json["indirect"] = true;
      json["target_va"] = to_hex(indirect->first);
      json["symbol"] = indirect->second;
      for (const FetchedValue& value : event.fetches) {
        if (value.name == "target" && value.value) json["target_live"] = to_hex(*value.value);
      }
    }
    events.push_back(std::move(json));
  }
  const bool exited = run != nullptr && run->target_exited;
  const uint64_t end_ns = window.ended ? window.end_timestamp_ns
                                       : (window.events.empty() ? 0 : window.events.back().timestamp_ns);
  nlohmann::json json = {
      {"window_id", window.window_id},
      {"tid", window.tid},
      {"start_va", to_hex(plan_.start_va)},
      {"stop_va", plan_.stop_va ? to_hex(*plan_.stop_va) : to_hex(plan_.stop_return_va)},
      {"start_timestamp_ns", window.first_timestamp_ns()},
      {"end_timestamp_ns", end_ns},
      {"duration_ns", end_ns >= window.first_timestamp_ns() ? end_ns - window.first_timestamp_ns() : 0},
      {"status", status(window, exited)},
      {"possible_loss", possible_loss(window, run)},
      {"lost_events", lost_count(window) ? nlohmann::json(*lost_count(window)) : nlohmann::json(nullptr)},
      {"end_record_lost", window.end_record_lost},
      {"events_not_kept", window.events_not_kept},
      {"start_fetches", start_fetches},
      {"events", events},
  };
  // A start frame handed by a tail jump to untraced code: where it ended,
  // and whether a probe saw that (a continuation ret) or a later event
  // above the frame implied it.
  if (window.ended && window.end_function_id != XREF_FUNCTION_NONE) {
    json["ended_in"] = module_prefix(window.end_function_id) + function_name(window.end_function_id);
  }
  json["end_inferred"] = window.ended && window.end_inferred;
  // A start function in a library: its VA is that module's.
  if (plan_.start_module_index != 0) json["start_module"] = plan_.modules[plan_.start_module_index].module->name();
  if (auto stamp = mark_of(window)) add_mark_json(json, *stamp);
  return json;
}

std::optional<MarkStamp> TraceRenderer::mark_of(const TraceWindow& window) const {
  if (marks_ == nullptr) return std::nullopt;
  return marks_->stamp(window.first_timestamp_ns());
}

void TraceRenderer::print_header(std::ostream& out, const std::string& backend) const {
  out << "pid " << target_.process.pid() << "  match " << target_.binary_match << "  slide +" << to_hex(slide())
      << "  backend " << backend << "  return_mode " << plan_.return_mode << "\n";
  for (const std::string& warning : warnings()) out << "warning: " << warning << "\n";
  out << "probes " << plan_.probes.size() << "  on 5-byte nops " << plan_.entry_nop_probes.size() << "\n";
  if (marks_ != nullptr) {
    out << "mark_file " << marks_->path() << "  clock " << marks_->clock_name();
    if (!marks_->untimed_reason().empty()) out << " (" << marks_->untimed_reason() << ")";
    out << "\n";
  }
}

void TraceRenderer::print_window(std::ostream& out, const TraceWindow& window, const TraceRun* run) {
  print_window_text(out, window_json(window, run));
}

nlohmann::json TraceRenderer::summary_json(const TraceRun& run) const {
  const WindowTally& released = run.windows->released();
  uint64_t complete = released.complete, events = released.events;
  for (const auto& [id, window] : run.windows->windows()) {
    events += window.events.size();
    if (status(window, run.target_exited) == "complete" && !possible_loss(window, &run)) ++complete;
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
      {"json_limit", "over the --json memory bound; --jsonl streams every window"},
  };
  for (const auto& [reason, why] : kReasons) {
    auto found = run.windows_not_shown.find(reason);
    if (found != run.windows_not_shown.end() && found->second > 0) {
      out << "not shown: " << found->second << " window" << (found->second == 1 ? "" : "s") << ": " << why << "\n";
    }
  }
  if (const uint64_t none = summary["windows_without_records"].get<uint64_t>(); none > 0) {
    out << "not shown: " << none << " window" << (none == 1 ? "" : "s")
        << ": every record was lost, the ring buffer being full\n";
  }
}

nlohmann::json TraceRenderer::process_json_after(const TraceRun& run) const {
  nlohmann::json process = xref::process_json_after(target_);
  process["pie_slide"] = to_hex(slide());
  process["warnings"] = warnings();
  (void)run;
  return process;
}

nlohmann::json TraceRenderer::document(const TraceRun& run) {
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& [id, window] : run.windows->windows()) windows.push_back(window_json(window, &run));
  return {
      {"schema_version", kSchemaVersion},
      {"tool", "xref"},
      {"tool_version", XREF_VERSION},
      {"operation", "live_trace"},
      {"backend", run.backend},
      {"process", process_json_after(run)},
      {"summary", summary_json(run)},
      {"windows", windows},
      {"error", nullptr},
      {"warnings", warnings()},
      {"limits", nlohmann::json::object()},
      {"stops", nlohmann::json::array({run.stop_reason})},
  };
}

}  // namespace xref
