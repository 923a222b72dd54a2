#include "probe/output.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "attach/fetched_value.h"
#include "hex.h"
#include "monotonic_clock.h"
#include "output/json_envelope.h"
#include "render/helper_names.h"
#include "render/probe_text.h"
#include "render/stack_frames.h"

namespace xref {
namespace {

constexpr size_t kTopGroups = 32;   // group keys shown per address (all are counted)

// Counts of a key map, the largest first (ties by key).
template <typename Key>
std::vector<std::pair<Key, uint64_t>> by_count(const std::map<Key, uint64_t>& counts) {
  std::vector<std::pair<Key, uint64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return sorted;
}

template <typename Map>
const std::map<uint64_t, uint64_t>& of_site(const Map& maps, uint32_t site) {
  static const std::map<uint64_t, uint64_t> kNone;
  auto found = maps.find(site);
  return found == maps.end() ? kNone : found->second;
}

// The other spellings merged into an address's probe site, and how many
// times it was typed in all.
nlohmann::json also_given(const ProbeAddress& address) {
  nlohmann::json others = nlohmann::json::array();
  for (size_t i = 1; i < address.spellings.size(); ++i) others.push_back(address.spellings[i].first);
  return others;
}

uint64_t times_given(const ProbeAddress& address) {
  uint64_t times = 0;
  for (const auto& spelling : address.spellings) times += spelling.second;
  return times;
}

// The sites an address's --group-by counts at: its rets for ret, else
// its own site.
std::vector<uint32_t> group_sites(const ProbePlan& plan, size_t index) {
  std::vector<uint32_t> sites;
  for (uint32_t site = 0; site < plan.sites.size(); ++site) {
    if (plan.sites[site].address == index && plan.sites[site].ret == (plan.group_by == "ret")) sites.push_back(site);
  }
  return sites;
}

// A full key map: how many passing hits of an address it could not count.
std::string map_full_warning(const std::string& kind, const ProbeAddress& address, uint64_t not_counted,
                             const std::string& what, uint64_t entries, const std::string& what_to_do) {
  return kind + ": " + address.given + ": " + std::to_string(not_counted) + " hits were not counted " + what +
         ": the map of " + std::to_string(entries) + " (address, key) pairs all addresses share was full; " +
         what_to_do;
}

}  // namespace

nlohmann::json ProbeRenderer::record_json(const ProbeRecord& record) {
  nlohmann::json fetches = nlohmann::json::array();
  for (const FetchedValue& value : record.fetches) fetches.push_back(fetched_json(value));
  nlohmann::json json = {{"hit", record.hit}, {"tid", record.tid}, {"timestamp_ns", record.timestamp_ns},
                         {"fetches", fetches}};
  if (record.return_address != 0) {
    const CallSiteInfo site = symbolizer_.call_site(record.return_address);
    json["call_site_va"] = site.known ? nlohmann::json(to_hex(site.call_site_va)) : nlohmann::json(nullptr);
    json["call_site_verified"] = site.verified;
    if (!site.caller.empty()) json["caller"] = site.caller;
    json["return_live"] = to_hex(record.return_address);
    if (site.call_site_live != 0) json["call_site_live"] = to_hex(site.call_site_live);
  }
  if (marks_ != nullptr) add_mark_json(json, marks_->stamp(record.timestamp_ns));
  if (!record.regs.empty()) json["regs"] = registers_json(record.regs);
  return json;
}

nlohmann::json ProbeRenderer::frame_json(uint64_t live, bool pc) { return stack_frame_json(symbolizer_, live, pc); }

// --stacks: the distinct user stacks of an address's passing hits, the
// most frequent first. At a function's entry a frame-pointer walk misses
// the caller (recent kernels, 6.18 here, put it in for uprobes); its return
// address, read at [rsp], is put in as frame 1 when the walk lacks it.
nlohmann::json ProbeRenderer::stacks_json(uint32_t site, const ProbeRun& run) {
  const auto& keyed = run.counts.stacks.count(site) ? run.counts.stacks.at(site) : std::map<uint64_t, uint64_t>();
  const auto sorted = by_count(keyed);
  nlohmann::json stacks = nlohmann::json::array();
  for (size_t i = 0; i < sorted.size() && i < kTopGroups; ++i) {
    const uint64_t key = sorted[i].first;
    const uint32_t id = static_cast<uint32_t>(key & ((1u << XREF_STACK_ID_BITS) - 1));
    const uint64_t caller = key >> XREF_STACK_ID_BITS;
    nlohmann::json frames = nlohmann::json::array();
    const auto found = run.counts.stack_frames.find(id);
    if (found != run.counts.stack_frames.end()) {
      for (size_t at = 0; at < found->second.size(); ++at) {
        frames.push_back(frame_json(found->second[at], at == 0));
        const bool walk_has_caller = found->second.size() > 1 && found->second[1] == caller;
        if (at == 0 && caller != 0 && !walk_has_caller) frames.push_back(frame_json(caller, false));
      }
    }
    stacks.push_back({{"key", to_hex(key)}, {"hits", sorted[i].second}, {"frames", frames}});
  }
  const uint64_t unread = run.counts.sites[site].stacks_unread;
  return {{"depth", plan_.stacks},
          {"method", "frame_pointers"},
          {"evidence", "observed"},
          {"note", "walked by the kernel through frame pointers: code built without them is skipped, ends the walk "
                   "early or yields a wrong frame; at a function's entry frame 1 is the return address at [rsp] "
                   "(exact)"},
          {"keys", sorted.size()},
          {"shown", stacks.size()},
          {"unread", unread},
          {"complete", unread == 0},
          {"stacks", stacks}};
}

// A debugger's breakpoint took over one of the address's sites: it is not
// observed since then (its counts stop there); null while it is.
nlohmann::json ProbeRenderer::released_json(size_t address, const ProbeRun& run) const {
  for (const ReleasedSite& released : run.released) {
    if (released.site >= plan_.sites.size() || plan_.sites[released.site].address != address) continue;
    const ProbeSite& site = plan_.sites[released.site];
    const auto live = target_.space.live_from_static(*plan_.modules[site.module_index].module, site.static_va);
    return {{"at_ms", released.at_ms},
            {"reason", released.reason},
            {"probe_va", to_hex(site.static_va)},
            {"probe_live", live ? nlohmann::json(to_hex(*live)) : nlohmann::json(nullptr)},
            {"hits", released.counts.hits},
            {"passed", released.counts.passed}};
  }
  return nullptr;
}

nlohmann::json ProbeRenderer::address_json(size_t index, const ProbeRun& run) {
  const ProbeAddress& address = plan_.addresses[index];
  // The address's own site, and its ret sites (--group-by ret).
  uint32_t own = 0;
  std::vector<uint32_t> rets;
  for (uint32_t site = 0; site < plan_.sites.size(); ++site) {
    if (plan_.sites[site].address != index) continue;
    if (plan_.sites[site].ret) {
      rets.push_back(site);
    } else {
      own = site;
    }
  }
  const xref_probe_counts& counts = run.counts.sites[own];
  const double seconds = static_cast<double>(run.elapsed_ms) / 1000.0;
  SymbolizedAddress named = symbolizer_.static_address(*plan_.modules[address.module_index].module,
                                                       address.static_va);
  // The function as the user spelled it: malloc, not __libc_malloc, its
  // alias at the same address that the symbolizer would pick.
  if (!named.function.empty() && named.static_va - named.offset == address.function.start) {
    named.function = address.function.demangled;
  }
  nlohmann::json json = {
      {"address", address.given},
      {"also_given", also_given(address)},
      {"times_given", times_given(address)},
      {"static_va", to_hex(address.static_va)},
      {"probe_va", to_hex(plan_.sites[own].static_va)},
      {"module", plan_.modules[address.module_index].module->name()},
      {"function", address.function.demangled},
      {"offset", to_hex(address.static_va - address.function.start)},
      {"at_entry", address.at_entry},
      {"location", named.name_with_offset()},
      {"hits", counts.hits},
      {"passed", counts.passed},
      {"unfiltered", counts.unfiltered},
      {"rate_per_s", seconds > 0 ? static_cast<double>(counts.passed) / seconds : 0.0},
  };
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& [tid, hits] : by_count(of_site(run.counts.threads, own))) {
    threads.push_back({{"tid", tid}, {"hits", hits}});
  }
  json["threads"] = threads;
  json["threads_complete"] = counts.threads_full == 0;
  if (!address.caller_method.empty()) {
    nlohmann::json sites = nlohmann::json::array();
    for (const auto& [return_address, hits] : by_count(of_site(run.counts.callers, own))) {
      const CallSiteInfo site = symbolizer_.call_site(return_address);
      nlohmann::json caller = {{"hits", hits},
                               {"return_live", to_hex(return_address)},
                               {"call_site_va", site.known ? nlohmann::json(to_hex(site.call_site_va)) : nlohmann::json(nullptr)},
                               {"call_site_verified", site.verified},
                               {"caller_va", site.caller_va ? nlohmann::json(to_hex(site.caller_va)) : nlohmann::json(nullptr)}};
      if (!site.caller.empty()) caller["caller"] = site.caller;
      if (!site.module.empty()) caller["module"] = site.module;
      if (site.caller_va != 0 && site.known) caller["caller_offset"] = to_hex(site.call_site_va - site.caller_va);
      if (site.call_site_live != 0) caller["call_site_live"] = to_hex(site.call_site_live);
      sites.push_back(std::move(caller));
    }
    json["callers"] = {{"evidence", address.caller_method == "exact" ? "observed" : "inferred"},
                       {"method", address.caller_method},
                       {"complete", counts.callers_full == 0 && counts.caller_unread == 0},
                       {"not_counted", counts.callers_full},
                       {"unread", counts.caller_unread},
                       {"sites", sites}};
  } else if (!address.caller_note.empty()) {
    json["callers"] = {{"evidence", "none"}, {"note", address.caller_note}};
  }
  if (!plan_.group_by.empty()) {
    std::map<uint64_t, uint64_t> groups;
    std::map<std::pair<std::string, bool>, uint64_t> string_groups;
    uint64_t counted = 0, not_counted = 0, unread = 0;
    for (uint32_t site : group_sites(plan_, index)) {
      for (const auto& [key, hits] : of_site(run.counts.groups, site)) {
        groups[key] += hits;
        counted += hits;
      }
      if (auto strings = run.counts.string_groups.find(site); strings != run.counts.string_groups.end()) {
        for (const auto& [key, hits] : strings->second) {
          string_groups[key] += hits;
          counted += hits;
        }
      }
      not_counted += run.counts.sites[site].groups_full;
      unread += run.counts.sites[site].groups_unread;
    }
    nlohmann::json values = nlohmann::json::array();
    size_t keys = 0;
    if (plan_.group_string_bound != 0) {
      keys = string_groups.size();
      for (const auto& [key, hits] : by_count(string_groups)) {
        if (values.size() == kTopGroups) break;
        values.push_back({{"string", key.first}, {"length", key.first.size()}, {"truncated", key.second}, {"hits", hits}});
      }
    } else {
      const auto sorted = by_count(groups);
      keys = sorted.size();
      for (size_t i = 0; i < sorted.size() && i < kTopGroups; ++i) {
        values.push_back({{"key", to_hex(sorted[i].first)}, {"hits", sorted[i].second}});
      }
    }
    json["groups"] = {{"by", plan_.group_by},
                      {"keys", keys},
                      {"shown", values.size()},
                      {"complete", not_counted == 0 && unread == 0},
                      {"counted", counted},
                      {"not_counted", not_counted},
                      {"unread", unread},
                      {"values", values}};
    if (plan_.group_by == "ret") json["groups"]["ret_sites"] = rets.size();
  }
  if (!plan_.hist.empty()) {
    nlohmann::json buckets = nlohmann::json::array();
    for (size_t bucket = 0; bucket < XREF_PROBE_HIST_BUCKETS; ++bucket) {
      if (counts.hist[bucket] == 0) continue;
      const uint64_t from = bucket == 0 ? 0 : (1ull << (bucket - 1));
      const uint64_t to = bucket == 0 ? 0 : (bucket >= 64 ? ~0ull : (1ull << bucket) - 1);
      buckets.push_back({{"from", from}, {"to", to}, {"hits", counts.hist[bucket]}});
    }
    json["hist"] = {{"name", plan_.hist}, {"buckets", buckets}};
  }
  nlohmann::json samples = nlohmann::json::array();
  for (const ProbeRecord& record : run.records) {
    if (record.site == own) samples.push_back(record_json(record));
  }
  if (plan_.stacks != 0) json["stacks"] = stacks_json(own, run);
  json["samples"] = samples;
  json["released"] = released_json(index, run);
  json["records"] = counts.records;
  // tracefs loses records per CPU, not per address: its loss is only in
  // the summary (lost_events) and the warnings.
  json["records_lost"] = run.backend == "tracefs" ? nlohmann::json(nullptr) : nlohmann::json(counts.records_lost);
  return json;
}

// A key map that was full: how many hits of which address it could not
// count, and what to do. The counts of keys that found room stay exact.
void ProbeRenderer::map_full_warnings(const ProbeRun& run, std::vector<std::string>& warnings) const {
  for (uint32_t site = 0; site < plan_.sites.size() && site < run.counts.sites.size(); ++site) {
    if (plan_.sites[site].ret) continue;
    const size_t index = plan_.sites[site].address;
    const ProbeAddress& address = plan_.addresses[index];
    const xref_probe_counts& counts = run.counts.sites[site];
    uint64_t groups_full = 0;
    for (uint32_t group_site : group_sites(plan_, index)) groups_full += run.counts.sites[group_site].groups_full;
    if (groups_full != 0) {
      warnings.push_back(map_full_warning("groups_full", address, groups_full, "by --group-by " + plan_.group_by,
                                          plan_.group_string_bound != 0 ? XREF_PROBE_MAX_STRING_GROUPS : XREF_PROBE_MAX_GROUPS,
                                          "group by something with fewer values, or --filter the hits"));
    }
    if (counts.callers_full != 0) {
      warnings.push_back(map_full_warning("callers_full", address, counts.callers_full, "by caller",
                                          XREF_PROBE_MAX_CALLERS, "probe fewer addresses with --callers"));
    }
    if (counts.threads_full != 0) {
      warnings.push_back(map_full_warning("threads_full", address, counts.threads_full, "by thread",
                                          XREF_PROBE_MAX_THREADS, "probe fewer addresses, or for less time"));
    }
  }
}

// An address with no hit at the end: say so, with how to check it.
void ProbeRenderer::never_hit_warnings(const ProbeRun& run, std::vector<std::string>& warnings) const {
  for (uint32_t site = 0; site < plan_.sites.size() && site < run.counts.sites.size(); ++site) {
    if (plan_.sites[site].ret || run.counts.sites[site].hits != 0) continue;
    const ProbeAddress& address = plan_.addresses[plan_.sites[site].address];
    const auto live = target_.space.live_from_static(*plan_.modules[address.module_index].module, address.static_va);
    warnings.push_back("never_hit: " + address.given + " (" + address.function.demangled + ", static VA " +
                       to_hex(address.static_va) + ") was not reached in " + std::to_string(run.elapsed_ms) +
                       " ms: check that it is the code you mean with `xref resolve --pid " +
                       std::to_string(target_.process.pid()) + " " + (live ? to_hex(*live) : to_hex(address.static_va)) +
                       "`, that this process runs it now, or probe its callers");
  }
}

nlohmann::json ProbeRenderer::stop_json(const ProbeRun& run) {
  nlohmann::json stop = nullptr;
  if (run.stop) {
    const ProbeStop& hit = *run.stop;
    nlohmann::json fetches = nlohmann::json::array();
    for (const FetchedValue& value : hit.fetches) fetches.push_back(fetched_json(value));
    const uint32_t address = hit.site < plan_.sites.size() ? plan_.sites[hit.site].address : 0;
    stop = {{"address", plan_.addresses[address].given},
            {"address_index", address},
            {"probe_va", to_hex(plan_.sites[hit.site < plan_.sites.size() ? hit.site : 0].static_va)},
            {"tid", hit.tid},
            {"hit", hit.hit},
            {"match", hit.match},
            {"timestamp_ns", hit.timestamp_ns},
            {"fetches", fetches},
            {"signal_sent", hit.signal_result == 0},
            {"evidence", "observed"}};
    if (hit.signal_result != 0) stop["signal_error"] = -hit.signal_result;
    if (hit.return_address != 0) {
      const CallSiteInfo site = symbolizer_.call_site(hit.return_address);
      stop["return_live"] = to_hex(hit.return_address);
      if (site.call_site_live != 0) stop["call_site_live"] = to_hex(site.call_site_live);
      if (!site.caller.empty()) stop["caller"] = site.caller;
    }
  }
  return {{"filter", request_.stop_when},
          {"skip", request_.stop_skip},
          {"signal", XREF_PROBE_STOP_SIGNAL},
          {"fired", run.stop.has_value()},
          {"stop", stop}};
}

nlohmann::json ProbeRenderer::document(const ProbeRun& run) {
  nlohmann::json addresses = nlohmann::json::array();
  uint64_t hits = 0, passed = 0, records = 0, lost = 0, not_counted = 0;
  for (size_t site = 0; site < run.counts.sites.size(); ++site) {
    const xref_probe_counts& counts = run.counts.sites[site];
    if (!plan_.sites[site].ret) {
      hits += counts.hits;
      passed += counts.passed;
    }
    records += counts.records;
    lost += counts.records_lost;
    not_counted += counts.threads_full + counts.callers_full + counts.groups_full + counts.stacks_unread;
  }
  for (size_t address = 0; address < plan_.addresses.size(); ++address) addresses.push_back(address_json(address, run));
  const nlohmann::json process = process_json_after(target_);
  std::vector<std::string> warnings = target_.warnings;
  warnings.insert(warnings.end(), plan_.warnings.begin(), plan_.warnings.end());
  if (!run.stop_reason.empty()) never_hit_warnings(run, warnings);
  map_full_warnings(run, warnings);
  nlohmann::json summary = {
      {"hits", hits},
      {"passed", passed},
      {"records", records},
      {"records_received", run.records.size()},
      {"lost_events", lost},
      // Sampled hits past --max-events: a bound, not a loss.
      {"samples_not_kept", run.samples_not_kept},
      {"not_counted", not_counted},
      // Hit counts are exact (kept in BPF); a result is complete when no
      // record was lost and every aggregation map had room.
      {"complete", lost == 0 && not_counted == 0},
      {"duration_ms", run.elapsed_ms},
      // Sites a debugger's breakpoint took over: counted up to then (each address's `released`).
      {"sites_released", run.released.size()},
      // Empty while the probe runs (a drain's document at a debugger stop).
      {"stop_reason", run.stop_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.stop_reason)},
      {"evidence", {{"hits", "observed"}, {"rate_per_s", "inferred: passed hits over the observation interval"}}},
  };
  nlohmann::json document = {
      {"schema_version", kSchemaVersion},
      {"tool", "xref"},
      {"tool_version", XREF_VERSION},
      {"operation", "live_probe"},
      {"backend", run.backend},
      {"process", process},
      {"summary", summary},
      {"addresses", addresses},
      {"error", nullptr},
      {"warnings", warnings},
      {"limits",
       {{"max_events", request_.max_events},
        {"every", request_.every},
        {"first", request_.first},
        {"until_hits", request_.until_hits},
        {"duration_ms", request_.duration_ms},
        {"ringbuf_bytes", request_.ringbuf_bytes}}},
      {"stops", run.stop_reason.empty() ? nlohmann::json::array() : nlohmann::json::array({run.stop_reason})},
  };
  if (!request_.stop_when.empty()) document["stop_when"] = stop_json(run);
  if (!plan_.globs.empty()) {
    nlohmann::json globs = nlohmann::json::array();
    for (const ProbeGlob& glob : plan_.globs) globs.push_back({{"pattern", glob.pattern}, {"matched", glob.matched}});
    document["globs"] = globs;
  }
  return document;
}

nlohmann::json ProbeRenderer::heartbeat_json(uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
  if (last_passed_.size() != plan_.addresses.size()) last_passed_.assign(plan_.addresses.size(), 0);
  const double seconds = static_cast<double>(elapsed_ms - last_heartbeat_ms_) / 1000.0;
  nlohmann::json addresses = nlohmann::json::array();
  uint64_t lost = 0;
  for (size_t site = 0; site < sites.size() && site < plan_.sites.size(); ++site) {
    lost += sites[site].records_lost;
    if (plan_.sites[site].ret) continue;
    const uint32_t address = plan_.sites[site].address;
    const uint64_t passed = sites[site].passed;
    addresses.push_back({{"address", plan_.addresses[address].given},
                         {"hits", sites[site].hits},
                         {"passed", passed},
                         {"rate_per_s", seconds > 0 ? static_cast<double>(passed - last_passed_[address]) / seconds : 0.0}});
    last_passed_[address] = passed;
  }
  last_heartbeat_ms_ = elapsed_ms;
  nlohmann::json heartbeat = {{"type", "heartbeat"}, {"elapsed_ms", elapsed_ms}, {"addresses", addresses},
                              {"lost_events", lost}};
  if (marks_ != nullptr) add_mark_json(heartbeat, marks_->stamp(monotonic_ns()));
  return heartbeat;
}

std::string ProbeRenderer::heartbeat_text(const nlohmann::json& heartbeat) const {
  std::ostringstream line;
  line << "heartbeat " << heartbeat["elapsed_ms"].get<uint64_t>() << " ms";
  for (const auto& address : heartbeat["addresses"]) {
    line << "  " << address["address"].get<std::string>() << " " << address["passed"].get<uint64_t>() << " ("
         << std::fixed << std::setprecision(1) << address["rate_per_s"].get<double>() << "/s)";
  }
  line << "  lost " << heartbeat["lost_events"].get<uint64_t>();
  if (heartbeat.contains("mark") && !heartbeat["mark"].is_null()) line << "  mark " << json_text(heartbeat["mark_match"]);
  line << "\n";
  return line.str();
}

ProbeRenderer::ProbeRenderer(const Target& target, const ProbePlan& plan, const ProbeRequest& request)
    : target_(target), plan_(plan), request_(request), symbolizer_(target.space, plan.modules[0].module),
      names_(target.space) {
  for (const ProbeAddress& address : plan.addresses) {
    const Module* module = plan.modules[address.module_index].module;
    names_.place({module->main_executable ? std::string() : module->name(), address.static_va, std::nullopt});
  }
}

void ProbeRenderer::print_text(std::ostream& out, const ProbeRun& run) {
  // The document's text, as serve shows it in a debugger (render/probe_text.h).
  for (const std::string& line : render::probe_lines(document(run), names_, {})) out << line << "\n";
}

}  // namespace xref
