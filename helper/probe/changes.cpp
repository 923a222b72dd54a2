#include "probe/changes.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace xref {
namespace {

uint64_t count_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return 0;
  return found->is_number_unsigned() ? found->get<uint64_t>() : static_cast<uint64_t>(std::max<int64_t>(0, found->get<int64_t>()));
}

// What names an entry of a list: its `field`; a group of strings has no
// "key" but its string and whether it was cut (docs/probe.md). "" for none.
std::string identity(const nlohmann::json& entry, const char* field) {
  if (!entry.is_object()) return "";
  if (const auto found = entry.find(field); found != entry.end()) return found->dump();
  if (std::string(field) == "key" && entry.contains("string")) {
    return nlohmann::json::array({entry["string"], entry.value("truncated", false)}).dump();
  }
  return "";
}

// identity -> hits of a list of {field, "hits"} objects.
std::map<std::string, uint64_t> hits_by(const nlohmann::json& list, const char* key_field) {
  std::map<std::string, uint64_t> hits;
  if (!list.is_array()) return hits;
  for (const auto& entry : list) {
    if (const std::string id = identity(entry, key_field); !id.empty()) hits[id] = count_of(entry, "hits");
  }
  return hits;
}

const nlohmann::json& member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

// The entries of `now` that are new or grew since `before`, with hits_added
// and new.
nlohmann::json grown(const nlohmann::json& before, const nlohmann::json& now, const char* key_field) {
  const auto earlier = hits_by(before, key_field);
  nlohmann::json changed = nlohmann::json::array();
  if (!now.is_array()) return changed;
  for (const auto& entry : now) {
    const std::string id = identity(entry, key_field);
    if (id.empty()) continue;
    const auto found = earlier.find(id);
    const uint64_t hits = count_of(entry, "hits");
    const uint64_t previous = found == earlier.end() ? 0 : found->second;
    if (found != earlier.end() && hits <= previous) continue;
    nlohmann::json item = entry;
    item["hits_added"] = hits - previous;
    item["new"] = found == earlier.end();
    changed.push_back(std::move(item));
  }
  return changed;
}

nlohmann::json address_changes(const nlohmann::json& before, const nlohmann::json& now) {
  nlohmann::json changes = {
      {"address", member(now, "address")},   {"location", member(now, "location")},
      {"function", member(now, "function")}, {"module", member(now, "module")},
      {"static_va", member(now, "static_va")}, {"probe_va", member(now, "probe_va")},
      {"hits", count_of(now, "hits")},       {"hits_added", count_of(now, "hits") - count_of(before, "hits")},
      {"passed", count_of(now, "passed")},   {"passed_added", count_of(now, "passed") - count_of(before, "passed")},
  };
  std::set<uint64_t> seen_threads;
  for (const auto& thread : member(before, "threads")) seen_threads.insert(count_of(thread, "tid"));
  nlohmann::json new_threads = nlohmann::json::array();
  const nlohmann::json& threads = member(now, "threads");
  for (const auto& thread : threads) {
    if (!seen_threads.count(count_of(thread, "tid"))) new_threads.push_back(count_of(thread, "tid"));
  }
  changes["threads"] = threads.is_array() ? threads.size() : 0;
  changes["new_threads"] = new_threads;
  if (const nlohmann::json& callers = member(now, "callers"); callers.is_object() && callers.contains("sites")) {
    changes["callers"] = {{"method", member(callers, "method")},
                          {"evidence", member(callers, "evidence")},
                          {"complete", member(callers, "complete")},
                          {"sites", grown(member(member(before, "callers"), "sites"), callers["sites"], "return_live")}};
  }
  if (const nlohmann::json& groups = member(now, "groups"); groups.is_object()) {
    changes["groups"] = {{"by", member(groups, "by")},
                         {"keys", member(groups, "keys")},
                         {"complete", member(groups, "complete")},
                         {"values", grown(member(member(before, "groups"), "values"), member(groups, "values"), "key")}};
  }
  if (const nlohmann::json& stacks = member(now, "stacks"); stacks.is_object()) {
    changes["stacks"] = {{"method", member(stacks, "method")},
                         {"keys", member(stacks, "keys")},
                         {"complete", member(stacks, "complete")},
                         {"stacks", grown(member(member(before, "stacks"), "stacks"), member(stacks, "stacks"), "key")}};
  }
  // Samples only ever arrive: those past the ones shown before are new.
  const nlohmann::json& samples = member(now, "samples");
  const size_t shown = member(before, "samples").is_array() ? member(before, "samples").size() : 0;
  nlohmann::json fresh = nlohmann::json::array();
  if (samples.is_array()) {
    for (size_t index = shown; index < samples.size(); ++index) fresh.push_back(samples[index]);
  }
  changes["samples"] = fresh;
  changes["records_lost_added"] = count_of(now, "records_lost") - count_of(before, "records_lost");
  return changes;
}

}  // namespace

nlohmann::json probe_changes(const nlohmann::json& before, const nlohmann::json& now) {
  const nlohmann::json& summary = member(now, "summary");
  const nlohmann::json& earlier = member(before, "summary");
  nlohmann::json addresses = nlohmann::json::array();
  const nlohmann::json& listed = member(now, "addresses");
  const nlohmann::json& listed_before = member(before, "addresses");
  for (size_t index = 0; listed.is_array() && index < listed.size(); ++index) {
    const nlohmann::json& previous =
        listed_before.is_array() && index < listed_before.size() ? listed_before[index] : nlohmann::json();
    addresses.push_back(address_changes(previous, listed[index]));
  }
  nlohmann::json changes = {{"elapsed_ms", count_of(summary, "duration_ms")},
          {"since_ms", count_of(earlier, "duration_ms")},
          {"hits_added", count_of(summary, "hits") - count_of(earlier, "hits")},
          {"lost_events", count_of(summary, "lost_events")},
          {"lost_added", count_of(summary, "lost_events") - count_of(earlier, "lost_events")},
          {"addresses", addresses}};
  // --stop-when: the stop, at the first drain that sees it.
  const nlohmann::json& stop = member(member(now, "stop_when"), "stop");
  if (stop.is_object() && !member(member(before, "stop_when"), "stop").is_object()) {
    changes["stop"] = stop;
    changes["stop"]["filter"] = member(member(now, "stop_when"), "filter");
    changes["stop"]["skip"] = member(member(now, "stop_when"), "skip");
  }
  return changes;
}

}  // namespace xref
