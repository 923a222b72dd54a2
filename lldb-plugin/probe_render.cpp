#include "probe_render.h"

#include <cstdio>

#include "hex.h"

namespace xref::lldb_plugin {
namespace {

constexpr size_t kSamplesPerStop = 8;

// A count of the helper's JSON: a non-negative integer, else 0.
uint64_t count(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return 0;
  if (found->is_number_unsigned()) return found->get<uint64_t>();
  return found->get<int64_t>() < 0 ? 0 : static_cast<uint64_t>(found->get<int64_t>());
}

std::string text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::string seconds(uint64_t ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", static_cast<double>(ms) / 1000.0);
  return buffer;
}

std::string plural(uint64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Where the user's address `index` is, in the debugger's names.
std::string address_where(const nlohmann::json& addresses, size_t index, AddressSymbols& symbols) {
  if (!addresses.is_array() || index >= addresses.size()) return {};
  const nlohmann::json& answered = addresses[index];
  EventAddress address{hex_field(answered, "live"), hex_field(answered, "static_va"), text(answered, "module")};
  return where_text(symbols.describe(address), address);
}

// Where a caller (or a sample) came from: its call instruction, else the
// return address the probe read.
std::string caller_where(const nlohmann::json& caller, AddressSymbols& symbols) {
  if (auto call = hex_field(caller, "call_site_live")) {
    EventAddress address{call, std::nullopt, {}};
    return where_text(symbols.describe(address), address);
  }
  if (auto back = hex_field(caller, "return_live")) {
    EventAddress address{back, std::nullopt, {}};
    return where_text(symbols.describe(address), address) + " (return address)";
  }
  return {};
}

// One frame of a --stacks stack: its pc, or the call before its return
// address.
std::string frame_where(const nlohmann::json& frame, AddressSymbols& symbols) {
  auto at = hex_field(frame, "call_site_live");
  if (!at) at = hex_field(frame, "live");
  if (!at) return "?";
  EventAddress address{at, std::nullopt, {}};
  const std::string where = where_text(symbols.describe(address), address);
  return where.empty() ? to_hex(*at) : where;
}

void frame_lines(const nlohmann::json& stack, AddressSymbols& symbols, std::vector<std::string>& lines) {
  for (const auto& frame : stack.value("frames", nlohmann::json::array())) {
    lines.push_back("          " + frame_where(frame, symbols));
  }
}

std::string group_key(const nlohmann::json& group, const std::string& by) {
  if (by == "tid") {
    if (auto tid = hex_field(group, "key")) return std::to_string(*tid);
  }
  return text(group, "key");
}

void sample_line(const nlohmann::json& sample, AddressSymbols& symbols, std::vector<std::string>& lines) {
  std::string line = "    sample hit " + std::to_string(count(sample, "hit")) + "  tid " + std::to_string(count(sample, "tid"));
  const std::string values = fetches_text(sample.value("fetches", nlohmann::json::array()));
  if (!values.empty()) line += "  " + values;
  const std::string from = caller_where(sample, symbols);
  if (!from.empty()) line += "  from " + from;
  lines.push_back(line);
}

void sample_lines(const nlohmann::json& samples, size_t limit, AddressSymbols& symbols, std::vector<std::string>& lines) {
  if (!samples.is_array()) return;
  for (size_t index = 0; index < samples.size() && index < limit; ++index) sample_line(samples[index], symbols, lines);
  if (samples.size() > limit) {
    lines.push_back("    ... " + plural(samples.size() - limit, "more sample") + " (xref show)");
  }
}

std::string added(const nlohmann::json& entry) {
  return "      +" + std::to_string(count(entry, "hits_added"));
}

std::string in_all(const nlohmann::json& entry) {
  return "  (" + std::to_string(count(entry, "hits")) + " in all)" + (entry.value("new", false) ? "  new" : "");
}

std::string ordinal(uint64_t n) {
  const uint64_t tens = n % 100;
  const char* suffix = tens >= 11 && tens <= 13 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

// --stop-when's stop: which hit, why, with its values, and where the
// thread really is (the signal is taken after the probed instruction ran).
void stop_lines(const nlohmann::json& stop, const nlohmann::json& addresses, uint64_t session, AddressSymbols& symbols,
                std::vector<std::string>& lines) {
  std::string line = "xref: probe session " + std::to_string(session) + " stopped thread " +
                     std::to_string(count(stop, "tid")) + ": hit " + std::to_string(count(stop, "hit")) + " of " +
                     text(stop, "address") + ", the " + ordinal(count(stop, "match")) + " where --stop-when '" +
                     text(stop, "filter") + "' held";
  const std::string values = fetches_text(stop.value("fetches", nlohmann::json::array()));
  if (!values.empty()) line += ": " + values;
  lines.push_back(line);
  const uint64_t index = count(stop, "address_index");
  std::string where;
  if (addresses.is_array() && index < addresses.size()) {
    const nlohmann::json& answered = addresses[index];
    EventAddress probe{hex_field(answered, "probe_live"), std::nullopt, text(answered, "module")};
    where = where_text(symbols.describe(probe), probe);
  }
  if (!stop.value("signal_sent", false)) {
    lines.push_back("xref: the stop signal could not be sent (error " + std::to_string(count(stop, "signal_error")) +
                    "): the thread did not stop");
    return;
  }
  lines.push_back("xref: (a signal from the probe: the thread stopped just after the probed instruction" +
                  (where.empty() ? std::string() : " at " + where) + ")");
  const std::string from = caller_where(stop, symbols);
  if (!from.empty()) lines.push_back("xref: called from " + from);
}

}  // namespace

std::vector<std::string> render_probe_changes(const nlohmann::json& changes, const nlohmann::json& addresses,
                                              uint64_t session, AddressSymbols& symbols) {
  std::vector<std::string> lines;
  const uint64_t elapsed = count(changes, "elapsed_ms");
  const uint64_t since = count(changes, "since_ms");
  lines.push_back("xref: probe session " + std::to_string(session) + " at " + seconds(elapsed) + " s (+" +
                  seconds(elapsed >= since ? elapsed - since : 0) + " s): " +
                  plural(count(changes, "hits_added"), "new hit") + ", " + std::to_string(count(changes, "lost_events")) +
                  " lost");
  if (changes.contains("stop") && changes["stop"].is_object()) stop_lines(changes["stop"], addresses, session, symbols, lines);
  const nlohmann::json& listed = changes.contains("addresses") ? changes["addresses"] : nlohmann::json::array();
  for (size_t index = 0; index < listed.size(); ++index) {
    const nlohmann::json& address = listed[index];
    std::string line = "  " + text(address, "address");
    const std::string where = address_where(addresses, index, symbols);
    if (!where.empty()) line += "  " + where;
    const uint64_t hits = count(address, "hits");
    const uint64_t hits_added = count(address, "hits_added");
    if (hits_added == 0) {
      lines.push_back(line + "  hits " + std::to_string(hits) + " (no new hits)");
      continue;
    }
    line += "  hits " + std::to_string(hits) + " (+" + std::to_string(hits_added) + ")";
    if (count(address, "passed") != hits) {
      line += "  passed " + std::to_string(count(address, "passed")) + " (+" +
              std::to_string(count(address, "passed_added")) + ")";
    }
    line += "  threads " + std::to_string(count(address, "threads"));
    const nlohmann::json& new_threads = address.value("new_threads", nlohmann::json::array());
    if (!new_threads.empty()) {
      line += ", new";
      for (const auto& tid : new_threads) line += " " + std::to_string(tid.is_number_unsigned() ? tid.get<uint64_t>() : 0);
    }
    lines.push_back(line);
    if (address.contains("callers") && !address["callers"].value("sites", nlohmann::json::array()).empty()) {
      lines.push_back("    callers (" + text(address["callers"], "method") + "):");
      for (const auto& caller : address["callers"]["sites"]) {
        lines.push_back(added(caller) + "  " + caller_where(caller, symbols) + in_all(caller));
      }
    }
    if (address.contains("groups") && !address["groups"].value("values", nlohmann::json::array()).empty()) {
      const std::string by = text(address["groups"], "by");
      lines.push_back("    by " + by + ":");
      for (const auto& group : address["groups"]["values"]) {
        lines.push_back(added(group) + "  " + group_key(group, by) + in_all(group));
      }
    }
    if (address.contains("stacks") && !address["stacks"].value("stacks", nlohmann::json::array()).empty()) {
      lines.push_back("    stacks (" + text(address["stacks"], "method") + "):");
      for (const auto& stack : address["stacks"]["stacks"]) {
        lines.push_back(added(stack) + in_all(stack));
        frame_lines(stack, symbols, lines);
      }
    }
    sample_lines(address.value("samples", nlohmann::json::array()), kSamplesPerStop, symbols, lines);
    if (const uint64_t lost = count(address, "records_lost_added"); lost > 0) {
      lines.push_back("    lost " + plural(lost, "sample") + " (ring buffer full)");
    }
  }
  return lines;
}

std::vector<std::string> render_probe_document(const nlohmann::json& document, const nlohmann::json& addresses,
                                               uint64_t session, const std::string& state, AddressSymbols& symbols) {
  std::vector<std::string> lines;
  const nlohmann::json& summary = document.value("summary", nlohmann::json::object());
  lines.push_back("xref: probe session " + std::to_string(session) + " (" + state + "), " +
                  std::to_string(count(summary, "duration_ms")) + " ms, backend " + text(document, "backend"));
  const nlohmann::json& listed = document.value("addresses", nlohmann::json::array());
  for (size_t index = 0; index < listed.size(); ++index) {
    const nlohmann::json& address = listed[index];
    std::string line = "  " + text(address, "address");
    const std::string where = address_where(addresses, index, symbols);
    if (!where.empty()) line += "  " + where;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", address.value("rate_per_s", 0.0));
    line += "  hits " + std::to_string(count(address, "hits")) + "  passed " + std::to_string(count(address, "passed")) +
            "  threads " + std::to_string(address.value("threads", nlohmann::json::array()).size()) + "  rate " + rate +
            "/s";
    lines.push_back(line);
    if (address.contains("released") && address["released"].is_object()) {
      lines.push_back("    not observed since " + std::to_string(count(address["released"], "at_ms")) + " ms (" +
                      text(address["released"], "reason") + "): counted up to then");
    }
    if (address.contains("callers") && address["callers"].contains("sites")) {
      lines.push_back("    callers (" + text(address["callers"], "method") + "):");
      for (const auto& caller : address["callers"]["sites"]) {
        lines.push_back("      " + std::to_string(count(caller, "hits")) + "  " + caller_where(caller, symbols));
      }
    } else if (address.contains("callers")) {
      lines.push_back("    callers unknown: " + text(address["callers"], "note"));
    }
    if (address.contains("groups")) {
      const std::string by = text(address["groups"], "by");
      lines.push_back("    by " + by + " (" + plural(count(address["groups"], "keys"), "key") + "):");
      for (const auto& group : address["groups"].value("values", nlohmann::json::array())) {
        lines.push_back("      " + std::to_string(count(group, "hits")) + "  " + group_key(group, by));
      }
    }
    if (address.contains("hist")) {
      lines.push_back("    hist " + text(address["hist"], "name") + ":");
      for (const auto& bucket : address["hist"].value("buckets", nlohmann::json::array())) {
        lines.push_back("      [" + std::to_string(count(bucket, "from")) + ", " + std::to_string(count(bucket, "to")) +
                        "]  " + std::to_string(count(bucket, "hits")));
      }
    }
    if (address.contains("stacks")) {
      const nlohmann::json& stacks = address["stacks"];
      lines.push_back("    stacks (" + text(stacks, "method") + ", " + plural(count(stacks, "keys"), "distinct stack") +
                      ", " + std::to_string(count(stacks, "unread")) + " unread):");
      for (const auto& stack : stacks.value("stacks", nlohmann::json::array())) {
        lines.push_back("      " + std::to_string(count(stack, "hits")));
        frame_lines(stack, symbols, lines);
      }
    }
    sample_lines(address.value("samples", nlohmann::json::array()), SIZE_MAX, symbols, lines);
    if (const uint64_t lost = count(address, "records_lost"); lost > 0) {
      lines.push_back("    lost " + plural(lost, "sample") + " (ring buffer full)");
    }
  }
  return lines;
}

std::string probe_end_line(uint64_t session, const std::string& stop_reason, const nlohmann::json& summary,
                           const nlohmann::json& error) {
  std::string line = "xref: session " + std::to_string(session) + " ended (" + stop_reason + ")";
  if (summary.is_object() && !summary.empty()) {
    line += ": " + plural(count(summary, "hits"), "hit") + ", " + std::to_string(count(summary, "passed")) +
            " passed, " + plural(count(summary, "records_received"), "sample") + ", lost " +
            std::to_string(count(summary, "lost_events"));
  }
  if (error.is_object() && error.contains("message")) line += "; " + text(error, "message");
  return line;
}

std::vector<std::string> render_release(uint64_t session, const nlohmann::json& result,
                                        const std::vector<uint64_t>& addresses) {
  std::string reason = text(result, "reason");
  if (reason.empty()) reason = "a breakpoint";
  const std::string prefix = "xref: session " + std::to_string(session);
  if (result.is_object() && result.value("ended", false)) {
    std::string where;
    for (uint64_t address : addresses) where += (where.empty() ? "" : ", ") + to_hex(address);
    return {prefix + " ended (released): " + reason + " is at its probe site " + where +
            "; what it recorded is kept"};
  }
  std::vector<std::string> lines;
  const nlohmann::json released = result.is_object() ? result.value("released", nlohmann::json::array())
                                                     : nlohmann::json::array();
  for (const auto& site : released) {
    if (!site.is_object()) continue;
    std::string what = text(site, "address");
    if (what.empty()) what = "?";
    if (site.value("ret_site", false)) what += "'s ret site";
    std::string live = text(site, "probe_live");
    if (live.empty()) live = "?";
    lines.push_back(prefix + " no longer observes " + what + " at " + live + " since " +
                    std::to_string(count(site, "at_ms")) + " ms (" + reason + " there): " +
                    std::to_string(count(site, "hits")) + " hits counted up to then");
  }
  if (!lines.empty() && result.value("hits_may_be_lost", false)) {
    lines.push_back("xref: warning: session " + std::to_string(session) + "'s other sites were out for " +
                    std::to_string(count(result, "gap_us")) +
                    " us while the process ran: hits then were not counted");
  }
  return lines;
}

}  // namespace xref::lldb_plugin
