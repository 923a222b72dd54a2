#include "watch/output.h"

#include <map>

#include "attach/fetched_value.h"
#include "hex.h"
#include "output/json_envelope.h"
#include "render/stack_frames.h"
#include "probe_abi.h"

namespace xref {
namespace {

const char* kind_name(WatchRecordKind kind) {
  switch (kind) {
    case WatchRecordKind::write: return "write";
    case WatchRecordKind::unobserved_change: return "unobserved_change";
    case WatchRecordKind::rearm: return "rearm";
  }
  return "write";
}

// An integer for a whole range of 1, 2, 4 or 8 bytes (as the target reads
// it, little-endian), else the bytes in hex, "…" when cut.
std::string value_text(const std::vector<uint8_t>& bytes, uint32_t length, uint32_t range_length, bool whole) {
  if (whole && (range_length == 1 || range_length == 2 || range_length == 4 || range_length == 8) &&
      bytes.size() == range_length) {
    uint64_t value = 0;
    for (size_t i = bytes.size(); i-- > 0;) value = value << 8 | bytes[i];
    return to_hex(value);
  }
  std::string text;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) text += ' ';
    text += to_hex_bytes(std::span<const uint8_t>(&bytes[i], 1));
  }
  if (length > bytes.size()) text += " …";
  return text;
}

std::string module_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

nlohmann::json stop_when_json(const WatchRequest& request, const std::optional<WatchStop>& stop) {
  nlohmann::json fired = nullptr;
  if (stop) {
    fired = {{"seq", stop->sequence},
             {"tid", stop->tid},
             {"range", stop->range},
             {"match", stop->match},
             {"signal", XREF_PROBE_STOP_SIGNAL},
             {"signal_result", stop->signal_result}};
  }
  return {{"filter", request.stop_when}, {"skip", request.stop_skip}, {"stop", fired}};
}

WatchRenderer::WatchRenderer(const Target& target, const WatchPlan& plan, const WatchRequest& request)
    : target_(target), plan_(plan), request_(request), symbolizer_(target.space, target.space.main_module()) {}

// A debug-register trap's writer: the instruction before the trap pc
// (watch/trap_writers.h), named like a store site; null when it could not
// be told (the warnings say why).
nlohmann::json WatchRenderer::hw_writer_json(const WatchRecord& record) {
  if (record.writer_pc == 0) return nullptr;
  const std::optional<SymbolizedAddress> place = symbolizer_.code_address(record.writer_pc);
  if (!place) return nullptr;
  return {
      {"pc", hex_value(record.writer_pc)},
      {"static_va", hex_value(place->static_va)},
      {"module", place->module.empty() ? module_name(target_.space.main_module()->path) : place->module},
      {"function", place->function},
      {"offset", place->offset},
      {"text", record.writer_text},
      {"by_contract", false},
      {"caller", nullptr},
      {"trap_pc", hex_value(record.pc)},
  };
}

nlohmann::json WatchRenderer::writer_json(const WatchRecord& record) {
  if (record.site == XREF_WATCH_SITE_HW) return hw_writer_json(record);
  if (record.site >= plan_.sites.size()) return nullptr;
  const WatchSite& site = plan_.sites[record.site];
  nlohmann::json writer = {
      {"pc", hex_value(site.live_va)},
      {"static_va", hex_value(site.static_va)},
      {"module", module_name(plan_.modules[site.module].path)},
      {"function", site.function},
      {"offset", site.function_offset},
      {"text", site.text},
      {"by_contract", site.by_contract},
      {"caller", nullptr},
  };
  if (site.by_contract && record.return_address != 0) {
    const CallSiteInfo call = symbolizer_.call_site(record.return_address);
    if (call.known) {
      writer["caller"] = {
          {"function", call.caller},
          {"offset", call.caller_va != 0 && call.call_site_va >= call.caller_va ? call.call_site_va - call.caller_va : 0},
          {"module", call.module.empty() ? module_name(target_.space.main_module()->path) : call.module},
          {"return_address", hex_value(record.return_address)},
          {"call_site_va", hex_value(call.call_site_va)},
      };
    }
  }
  return writer;
}

nlohmann::json WatchRenderer::record_json(const WatchRecord& record, const WatchRun* run) {
  const WatchRange& range = plan_.ranges[record.range];
  // Where the range was at the record's generation (--follow moves it).
  uint64_t start = range.address;
  if (run != nullptr && record.range < run->ranges.size() &&
      record.generation < run->ranges[record.range].addresses.size()) {
    start = run->ranges[record.range].addresses[record.generation];
  } else if (record.kind == WatchRecordKind::write && (record.address < range.address ||
                                                        record.address - range.address >= range.length)) {
    start = record.address;  // streamed before the end: a write at a place the range has left
  }
  const uint64_t offset = record.address >= start ? record.address - start : 0;
  const bool whole = offset == 0 && record.length == range.length;
  nlohmann::json json = {
      {"type", kind_name(record.kind)},
      {"seq", record.kind == WatchRecordKind::write ? nlohmann::json(record.sequence) : nlohmann::json(nullptr)},
      {"tid", record.tid == 0 ? nlohmann::json(nullptr) : nlohmann::json(record.tid)},
      {"time_ns", record.timestamp_ns},
      {"range", record.range},
      {"generation", record.generation},
      {"address", hex_value(record.address)},
      {"offset", record.kind == WatchRecordKind::rearm ? 0 : offset},
      {"length", record.length},
  };
  if (record.kind == WatchRecordKind::rearm) {
    json["since_ns"] = record.since_ns;
    json["unwatched_ns"] = record.timestamp_ns > record.since_ns ? record.timestamp_ns - record.since_ns : 0;
    json["parked"] = record.length == 0;
    return json;
  }
  json["old"] = record.flags & XREF_WATCH_R_OLD_UNREAD ? nlohmann::json(nullptr)
                                                       : nlohmann::json(value_text(record.old_bytes, record.length, range.length, whole));
  json["new"] = record.flags & XREF_WATCH_R_NEW_UNREAD ? nlohmann::json(nullptr)
                                                       : nlohmann::json(value_text(record.new_bytes, record.length, range.length, whole));
  json["old_bytes"] = to_hex_bytes(record.old_bytes);
  json["new_bytes"] = to_hex_bytes(record.new_bytes);
  json["cut"] = (record.flags & XREF_WATCH_R_CUT) != 0;
  if (record.kind == WatchRecordKind::unobserved_change) {
    json["since_ns"] = record.since_ns;
    return json;
  }
  json["new_read_after"] = (record.flags & XREF_WATCH_R_NEW_AFTER) != 0;
  json["old_from_records"] = (record.flags & kWatchOldFromRecords) != 0;
  json["writer"] = writer_json(record);
  add_detail_json(record, json);
  if (marks_ != nullptr) add_mark_json(json, marks_->stamp(record.timestamp_ns));
  return json;
}

// --fetch, --regs, --callers: what the write's hit read (stores: at the
// uprobe, before the store ran; hw: after the trap).
void WatchRenderer::add_detail_json(const WatchRecord& record, nlohmann::json& json) {
  if (!plan_.fetches.empty()) {
    nlohmann::json fetches = nlohmann::json::array();
    for (const FetchedValue& value : record.fetches) fetches.push_back(fetched_json(value));
    json["fetches"] = fetches;
  }
  if (request_.regs) {
    json["regs"] = record.regs.empty() ? nlohmann::json(nullptr) : registers_json(record.regs);
    json["regs_at"] = record.site == XREF_WATCH_SITE_HW ? "after_trap" : "before_store";
  }
  if (request_.callers) {
    nlohmann::json frames = nlohmann::json::array();
    for (size_t at = 0; at < record.stack.size(); ++at) {
      frames.push_back(stack_frame_json(symbolizer_, record.stack[at], at == 0));
    }
    json["stack"] = frames;
  }
}

// --callers: the passing writes' stacks, counted in BPF per writer site,
// the most frequent first.
nlohmann::json WatchRenderer::callers_json(const WatchRun& run) {
  constexpr size_t kShown = 64;
  nlohmann::json stacks = nlohmann::json::array();
  uint64_t unread = 0;
  for (const WatchRangeCounts& counts : run.counts) unread += counts.stacks_unread;
  for (size_t index = 0; index < run.stacks.size() && index < kShown; ++index) {
    const WatchStackCount& counted = run.stacks[index];
    nlohmann::json frames = nlohmann::json::array();
    for (size_t at = 0; at < counted.frames.size(); ++at) {
      frames.push_back(stack_frame_json(symbolizer_, counted.frames[at], at == 0));
    }
    nlohmann::json writer = nullptr;
    if (counted.site < plan_.sites.size()) {
      const WatchSite& site = plan_.sites[counted.site];
      writer = {{"static_va", hex_value(site.static_va)},
                {"module", module_name(plan_.modules[site.module].path)},
                {"function", site.function},
                {"offset", site.function_offset},
                {"text", site.text},
                {"by_contract", site.by_contract}};
    }
    const nlohmann::json site = counted.site == XREF_WATCH_SITE_HW ? nlohmann::json(nullptr) : nlohmann::json(counted.site);
    stacks.push_back({{"site", site},
                      {"writer", writer},
                      {"writes", counted.writes},
                      {"frames", frames}});
  }
  return {{"method", "frame_pointers"},
          {"note", run.backend == "hw"
                       ? "walked by the kernel through frame pointers at the trap (frame 0: the trap pc, the "
                         "instruction after the writer); code built without frame pointers ends the walk early or "
                         "yields a wrong frame"
                       : "frame 1 is the store's return address by its .eh_frame CFA rule (a libc writer's: [rsp] at "
                         "its entry); the frames after it are the kernel's frame-pointer walk, kept only where that "
                         "walk agrees at frame 1 (code built with frame pointers)"},
          {"distinct", run.stacks.size()},
          {"shown", stacks.size()},
          {"unread", unread},
          {"complete", unread == 0},
          {"stacks", stacks}};
}

nlohmann::json WatchRenderer::ranges_json(const WatchRun& run) const {
  nlohmann::json ranges = nlohmann::json::array();
  for (size_t index = 0; index < plan_.ranges.size(); ++index) {
    const WatchRange& range = plan_.ranges[index];
    const WatchRangeState state = index < run.ranges.size() ? run.ranges[index] : WatchRangeState{};
    ranges.push_back({
        {"index", index},
        {"spelled", range.spelled},
        {"address", hex_value(range.address)},
        {"length", range.length},
        {"module", range.module.empty() ? nlohmann::json(nullptr) : nlohmann::json(module_name(range.module))},
        {"symbol", range.symbol.empty() ? nlohmann::json(nullptr) : nlohmann::json(range.symbol)},
        {"on_stack", range.on_stack},
        {"is_slot", range.is_slot},
        {"follow_slot", range.follow_slot ? nlohmann::json(*range.follow_slot) : nlohmann::json(nullptr)},
        {"follow_offset", range.follow_offset},
        {"parked", range.parked},
        {"generation", state.generation},
    });
  }
  return ranges;
}

nlohmann::json WatchRenderer::sites_json() const {
  StoreSiteCounts total;
  for (const WatchModule& module : plan_.modules) {
    total.functions += module.counts.functions;
    total.stores += module.counts.stores;
    total.probed += module.counts.probed;
    total.pruned_stack += module.counts.pruned_stack;
    total.pruned_static += module.counts.pruned_static;
    total.evex += module.counts.evex;
    total.segment += module.counts.segment;
    total.unbounded += module.counts.unbounded;
    total.undecodable += module.counts.undecodable;
  }
  uint64_t stores = 0;
  for (const WatchSite& site : plan_.sites) {
    if (site.operand.kind == XREF_STORE_PLAIN || site.operand.kind == XREF_STORE_REP_STOS ||
        site.operand.kind == XREF_STORE_REP_MOVS) {
      ++stores;
    }
  }
  return {
      {"scope", plan_.scope},
      {"functions", total.functions},
      {"stores_found", total.stores},
      {"probed", stores},
      {"after_sites", plan_.after_sites},
      {"after_missing", plan_.after_missing},
      {"pruned_stack", total.pruned_stack},
      {"pruned_static", total.pruned_static},
      {"evex", total.evex},
      {"segment", total.segment},
      {"unbounded", total.unbounded},
      {"undecodable", total.undecodable},
      {"refused", plan_.refused},
      {"uprobes", plan_.sites.size()},
      {"contracts", plan_.contracts},
  };
}

nlohmann::json WatchRenderer::summary_json(const WatchRun& run, const nlohmann::json& writes) const {
  nlohmann::json summary = nlohmann::json::array();
  for (size_t index = 0; index < plan_.ranges.size(); ++index) {
    const WatchRangeCounts counts = index < run.counts.size() ? run.counts[index] : WatchRangeCounts{};
    const WatchRangeState state = index < run.ranges.size() ? run.ranges[index] : WatchRangeState{};
    std::map<std::string, uint64_t> by_writer;
    std::map<std::string, nlohmann::json> writer_of;
    uint64_t recorded = 0;
    for (const nlohmann::json& write : writes) {
      if (write["range"] != index) continue;
      ++recorded;
      const nlohmann::json& writer = write["writer"];
      if (writer.is_null()) continue;
      std::string key = writer["static_va"].get<std::string>();
      if (!writer["caller"].is_null()) key += " " + writer["caller"]["call_site_va"].get<std::string>();
      ++by_writer[key];
      writer_of[key] = writer;
    }
    nlohmann::json writers = nlohmann::json::array();
    for (const auto& [key, count] : by_writer) {
      nlohmann::json writer = writer_of[key];
      writer["writes"] = count;
      writers.push_back(writer);
    }
    std::sort(writers.begin(), writers.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["writes"] > b["writes"]; });
    summary.push_back({
        {"range", index},
        {"writes", counts.writes},
        {"unchanged", counts.unchanged},
        {"passed", counts.passed},
        {"recorded", recorded},
        {"records_lost", counts.records_lost},
        {"unread", counts.unread},
        {"in_flight_full", counts.in_flight_full},
        {"unfiltered", counts.unfiltered},
        {"writers", writers},
        {"unobserved_changes", state.unobserved},
        {"rearms", state.rearms},
        {"unwatched_ns_longest", state.unwatched_ns_longest},
        {"resyncs", state.resyncs},
    });
  }
  return summary;
}

nlohmann::json WatchRenderer::document(const WatchRun& run) {
  nlohmann::json writes = nlohmann::json::array(), unobserved = nlohmann::json::array(),
                 rearms = nlohmann::json::array(), stream = nlohmann::json::array();
  for (const WatchRecord& record : run.records) {
    nlohmann::json json = record_json(record, &run);
    stream.push_back(json);
    if (record.kind == WatchRecordKind::write) writes.push_back(std::move(json));
    else if (record.kind == WatchRecordKind::unobserved_change) unobserved.push_back(std::move(json));
    else rearms.push_back(std::move(json));
  }
  nlohmann::json summary = summary_json(run, writes);
  uint64_t lost = 0, in_flight_full = 0, unread = 0;
  for (const WatchRangeCounts& counts : run.counts) {
    lost += counts.records_lost;
    in_flight_full += counts.in_flight_full;
    unread += counts.unread;
  }
  std::vector<std::string> warnings = target_.warnings;
  warnings.insert(warnings.end(), plan_.warnings.begin(), plan_.warnings.end());
  warnings.insert(warnings.end(), run.warnings.begin(), run.warnings.end());
  const bool complete = lost == 0 && in_flight_full == 0 && plan_.refused == 0;
  nlohmann::json result = {
      {"backend", run.backend},
      {"backend_reason", run.backend_reason},
      {"ranges", ranges_json(run)},
      {"sites", sites_json()},
      {"stream", stream},
      {"writes", writes},
      {"unobserved_changes", unobserved},
      {"rearms", rearms},
      {"summary", summary},
      {"lost", lost},
      {"in_flight_full", in_flight_full},
      {"unread", unread},
      {"complete", complete},
      {"duration_ms", run.elapsed_ms},
      {"armed_ns", run.armed_ns},
      {"stop_reason", run.stop_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.stop_reason)},
      {"fetch", plan_.fetches.empty() ? nlohmann::json(nullptr) : nlohmann::json(to_string(plan_.fetches))},
      {"filter", request_.filter.empty() ? nlohmann::json(nullptr) : nlohmann::json(request_.filter)},
  };
  if (request_.callers) result["callers"] = callers_json(run);
  uint64_t unfiltered = 0;
  for (const WatchRangeCounts& counts : run.counts) unfiltered += counts.unfiltered;
  if (unfiltered > 0) {
    warnings.push_back("unfiltered: " + std::to_string(unfiltered) +
                       " writes were not recorded because a value --filter needs could not be read (counted in "
                       "summary[].unfiltered)");
  }
  if (marks_ != nullptr) {
    result["marks"] = {{"file", marks_->path()}, {"clock", marks_->clock_name()}};
    if (!marks_->untimed_reason().empty()) result["marks"]["untimed_reason"] = marks_->untimed_reason();
  }
  if (!request_.stop_when.empty()) result["stop_when"] = stop_when_json(request_, run.stop);
  return {
      {"schema_version", kSchemaVersion},
      {"tool", "xref"},
      {"tool_version", XREF_VERSION},
      {"operation", "live_watch"},
      {"process", process_json_after(target_)},
      {"result", result},
      {"coverage",
       {{"scope", plan_.scope},
        {"contracts", plan_.contracts},
        {"unobserved_check", run.unobserved_exact ? "exact: every write recorded, ranges re-read at each drain"
                                                  : "resynced: writes were sampled or filtered (--every/--first/"
                                                    "--filter), so a change no record explains is taken as it is, "
                                                    "not reported"},
        {"refused_stores", plan_.refused}}},
      {"error", nullptr},
      {"warnings", warnings},
      {"limits",
       {{"max_events", request_.max_events},
        {"every", request_.every},
        {"first", request_.first},
        {"until_hits", request_.until_hits},
        {"duration_ms", request_.duration_ms}}},
      {"stops", run.stop_reason.empty() ? nlohmann::json::array() : nlohmann::json::array({run.stop_reason})},
  };
}

}  // namespace xref
