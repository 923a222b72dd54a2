#include "render/watch_text.h"

#include <cstdio>
#include <algorithm>
#include <optional>
#include <sstream>

#include "output/json_envelope.h"
#include "render/columns.h"
#include "render/fetch_text.h"
#include "render/place_text.h"


namespace xref::render {
namespace {

std::string range_label(const nlohmann::json& record) {
  std::string label = "[" + std::to_string(record["range"].get<uint64_t>()) + "]";
  const uint64_t offset = record.value("offset", uint64_t{0});
  if (offset != 0 || record["type"] == "write") label += offset != 0 ? "+" + std::to_string(offset) : "";
  return label;
}

std::string ms(uint64_t ns, uint64_t origin) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ns > origin ? static_cast<double>(ns - origin) / 1e6 : 0.0);
  return text;
}

std::optional<uint64_t> live_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return std::nullopt;
  try {
    return std::stoull(object[key].get<std::string>(), nullptr, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string writer_text(const nlohmann::json& writer, Names* names) {
  if (writer.is_null()) return "?";
  if (names != nullptr && !writer["by_contract"].get<bool>()) {
    // As the debugger names the pc: "add_total+0x12 at watch_target.c:57".
    const CodeAddress address{"", std::nullopt, live_of(writer, "pc")};
    const std::string place = known_place_text(*names, address);
    if (!place.empty()) return place + "  (" + writer["module"].get<std::string>() + ")  " + writer["text"].get<std::string>();
  }
  std::string text;
  if (writer["by_contract"].get<bool>()) {
    const nlohmann::json& caller = writer["caller"];
    if (!caller.is_null()) {
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(caller["offset"].get<uint64_t>()));
      text = caller["function"].get<std::string>() + offset + " via ";
    }
    return text + writer["function"].get<std::string>() + " (libc, by contract)";
  }
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(writer["offset"].get<uint64_t>()));
  return writer["function"].get<std::string>() + offset + "  (" + writer["module"].get<std::string>() + ")  " +
         writer["text"].get<std::string>();
}

// A stack frame as "function (module)", else its live address.
std::string frame_text(const nlohmann::json& frame) {
  std::string text = frame.contains("function") ? frame["function"].get<std::string>() : frame["live"].get<std::string>();
  if (frame.contains("module")) text += " (" + frame["module"].get<std::string>() + ")";
  return text;
}

// --callers: the stacks counted per writer site, the most frequent first.
void callers_lines(const nlohmann::json& callers, std::vector<std::string>& lines) {
  lines.push_back("callers (" + callers["method"].get<std::string>() + ", " +
                  std::to_string(callers["distinct"].get<uint64_t>()) + " distinct stacks, " +
                  std::to_string(callers["unread"].get<uint64_t>()) + " unread):");
  for (const nlohmann::json& stack : callers["stacks"]) {
    const uint64_t writes = stack["writes"].get<uint64_t>();
    std::string head = "  " + std::to_string(writes) + (writes == 1 ? " write" : " writes");
    if (!stack["writer"].is_null()) {
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%llx",
                    static_cast<unsigned long long>(stack["writer"]["offset"].get<uint64_t>()));
      head += "  by " + stack["writer"]["function"].get<std::string>() + offset;
    }
    lines.push_back(head);
    for (const nlohmann::json& frame : stack["frames"]) lines.push_back("      " + frame_text(frame));
  }
}

}  // namespace

std::string watch_record_line(const nlohmann::json& record, uint64_t armed_ns, Names* names) {
  const std::string seq = record["seq"].is_null() ? "-" : std::to_string(record["seq"].get<uint64_t>());
  const std::string tid = record["tid"].is_null() ? "-" : std::to_string(record["tid"].get<uint64_t>());
  std::string line = pad_left(seq, 6) + "  " + pad_right(tid, 8) + pad_right(range_label(record), 7);
  if (line.back() != ' ') line += ' ';
  if (record["type"] == "rearm") {
    const uint64_t unwatched = record["unwatched_ns"].get<uint64_t>();
    if (record["parked"].get<bool>()) {
      return line + "re-armed: the slot holds 0, the range is parked (not watched) until it changes";
    }
    return line + "re-armed at " + record["address"].get<std::string>() + " (" + std::to_string(record["length"].get<uint64_t>()) +
           " bytes), unwatched for " + std::to_string(unwatched / 1000) + " us after the slot's write";
  }
  const std::string old_text = record["old"].is_null() ? "?" : record["old"].get<std::string>();
  const std::string new_text = record["new"].is_null() ? "?" : record["new"].get<std::string>();
  line += pad_right(old_text + " → " + new_text, 32) + "  ";
  if (record["type"] == "unobserved_change") {
    return line + "unobserved change between " + ms(record["since_ns"].get<uint64_t>(), armed_ns) + " and " +
           ms(record["time_ns"].get<uint64_t>(), armed_ns) + " (the kernel, or code outside --in)";
  }
  line += writer_text(record["writer"], names);
  if (record.value("new_read_after", false)) line += "  [new read after]";
  if (record.contains("fetches") && !record["fetches"].empty()) line += "  " + fetches_text(record["fetches"]);
  if (record.contains("regs") && record["regs"].is_object()) {
    line += "  rip=" + record["regs"]["rip"].get<std::string>() + " rsp=" + record["regs"]["rsp"].get<std::string>() +
            " (" + record["regs_at"].get<std::string>() + "; registers: --json)";
  }
  if (record.contains("mark_match") && record["mark_match"].is_string()) line += "  mark " + json_text(record["mark_match"]);
  if (record.value("old_from_records", false)) line += "  [old from the writes before]";
  return line;
}

std::vector<std::string> watch_lines(const nlohmann::json& document) {
  std::vector<std::string> lines;
  const nlohmann::json& result = document["result"];
  const nlohmann::json& ranges = result["ranges"];
  const nlohmann::json& process = document["process"];
  lines.push_back("watching " + std::to_string(ranges.size()) + " range" + (ranges.size() == 1 ? "" : "s") + " of pid " +
                  std::to_string(process.value("pid", 0)) + " (" + result["backend"].get<std::string>() + ": " +
                  result["backend_reason"].get<std::string>() + ")");
  for (const nlohmann::json& range : ranges) {
    std::string line = "  [" + std::to_string(range["index"].get<uint64_t>()) + "] " + range["spelled"].get<std::string>() +
                       "  " + range["address"].get<std::string>() + "  " + std::to_string(range["length"].get<uint64_t>()) +
                       (range["length"].get<uint64_t>() == 1 ? " byte" : " bytes");
    std::string where;
    if (!range["symbol"].is_null()) where = range["symbol"].get<std::string>();
    if (!range["module"].is_null()) where += (where.empty() ? "" : " in ") + range["module"].get<std::string>();
    if (range["on_stack"].get<bool>()) where += (where.empty() ? "" : ", ") + std::string("on a stack");
    if (range["is_slot"].get<bool>()) where += (where.empty() ? "" : ", ") + std::string("--follow slot");
    if (!range["follow_slot"].is_null()) {
      where += (where.empty() ? "" : ", ") + std::string("follows [") + std::to_string(range["follow_slot"].get<uint64_t>()) + "]";
    }
    if (range["parked"].get<bool>()) where += ", parked (its slot holds 0)";
    if (!where.empty()) line += "  (" + where + ")";
    lines.push_back(line);
  }
  const nlohmann::json& sites = result["sites"];
  if (result["backend"] == "stores") {
    lines.push_back("  stores: " + std::to_string(sites["probed"].get<uint64_t>()) + " store sites probed (+" +
                    std::to_string(sites["after_sites"].get<uint64_t>()) + " after-sites) in " +
                    sites["scope"].get<std::string>() + "; " +
                    std::to_string(sites["pruned_stack"].get<uint64_t>() + sites["pruned_static"].get<uint64_t>()) +
                    " pruned (" + std::to_string(sites["pruned_stack"].get<uint64_t>()) + " stack, " +
                    std::to_string(sites["pruned_static"].get<uint64_t>()) + " static)");
    lines.push_back("          " + std::to_string(sites["evex"].get<uint64_t>()) + " EVEX and " +
                    std::to_string(sites["refused"].get<uint64_t>()) + " refused stores not probed");
    std::string contracts;
    for (const nlohmann::json& contract : sites["contracts"]) {
      contracts += (contracts.empty() ? "" : ", ") + contract.get<std::string>();
    }
    if (!contracts.empty()) lines.push_back("          by contract: " + contracts);
  }
  lines.push_back("   seq  tid     range  old → new                         writer");
  for (const nlohmann::json& record : result["stream"]) {
    lines.push_back(watch_record_line(record, result.value("armed_ns", uint64_t{0})));
    if (!record.contains("stack")) continue;
    const nlohmann::json& stack = record["stack"];
    for (size_t at = 1; at < stack.size(); ++at) lines.push_back("                  ← " + frame_text(stack[at]));
  }
  for (std::string& line : watch_summary_lines(document)) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> watch_summary_lines(const nlohmann::json& document) {
  std::vector<std::string> lines;
  const nlohmann::json& result = document["result"];
  const nlohmann::json& ranges = result["ranges"];
  lines.push_back("summary");
  for (const nlohmann::json& summary : result["summary"]) {
    const uint64_t index = summary["range"].get<uint64_t>();
    std::string line = "  [" + std::to_string(index) + "] " + ranges[index]["spelled"].get<std::string>() + ": " +
                       std::to_string(summary["writes"].get<uint64_t>()) + " writes (" +
                       std::to_string(summary["recorded"].get<uint64_t>()) + " recorded";
    if (summary["unchanged"].get<uint64_t>() > 0) line += ", " + std::to_string(summary["unchanged"].get<uint64_t>()) + " unchanged";
    if (!result.value("filter", nlohmann::json()).is_null()) {
      line += ", " + std::to_string(summary["passed"].get<uint64_t>()) + " passed the filter";
      if (summary.value("unfiltered", uint64_t{0}) > 0) {
        line += ", " + std::to_string(summary["unfiltered"].get<uint64_t>()) + " unfiltered (a value unread)";
      }
    }
    line += ")";
    std::string writers;
    for (const nlohmann::json& writer : summary["writers"]) {
      std::string name;
      if (writer["by_contract"].get<bool>() && !writer["caller"].is_null()) {
        name = writer["caller"]["function"].get<std::string>() + " via " + writer["function"].get<std::string>();
      } else {
        char offset[32];
        std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(writer["offset"].get<uint64_t>()));
        name = writer["function"].get<std::string>() + offset;
      }
      writers += (writers.empty() ? "" : ", ") + name + " ×" + std::to_string(writer["writes"].get<uint64_t>());
    }
    if (!writers.empty()) line += ", writers: " + writers;
    line += "; lost " + std::to_string(summary["records_lost"].get<uint64_t>());
    if (summary["rearms"].get<uint64_t>() > 0) {
      line += "; re-armed " + std::to_string(summary["rearms"].get<uint64_t>()) + "× (longest unwatched " +
              std::to_string(summary["unwatched_ns_longest"].get<uint64_t>() / 1000) + " us)";
    }
    if (summary["unobserved_changes"].get<uint64_t>() > 0) {
      line += "; unobserved changes " + std::to_string(summary["unobserved_changes"].get<uint64_t>());
    }
    lines.push_back(line);
  }
  if (result.contains("callers")) callers_lines(result["callers"], lines);
  for (const nlohmann::json& warning : document["warnings"]) lines.push_back("warning: " + warning.get<std::string>());
  lines.push_back(std::string("complete: ") + (result["complete"].get<bool>() ? "yes" : "no") + " (" +
                  std::to_string(result["lost"].get<uint64_t>()) + " lost)" +
                  (result["stop_reason"].is_null() ? "" : "; stopped: " + result["stop_reason"].get<std::string>()));
  return lines;
}

std::vector<std::string> watch_stop_lines(uint64_t session, const nlohmann::json& stop, const nlohmann::json& record,
                                          uint64_t armed_ns, Names& names) {
  const std::string tid = std::to_string(stop.value("tid", uint64_t{0}));
  std::string line = "xref: session " + std::to_string(session) + ": --stop-when '" + stop.value("filter", std::string()) +
                     "' held at write " + std::to_string(stop.value("seq", uint64_t{0}));
  if (stop.value("skip", uint64_t{0}) != 0) line += " (after " + std::to_string(stop.value("skip", uint64_t{0})) + " skipped)";
  if (stop.value("signal_result", int64_t{0}) != 0) {
    line += ": the signal to thread " + tid + " failed (" + std::to_string(stop.value("signal_result", int64_t{0})) + ")";
  } else {
    line += ": thread " + tid + " stopped after it (signal " + std::to_string(stop.value("signal", 0)) + ")";
  }
  std::vector<std::string> lines{line};
  if (record.is_object()) lines.push_back(watch_record_line(record, armed_ns, &names));
  return lines;
}

std::vector<CodeAddress> watch_addresses(const nlohmann::json& records) {
  std::vector<CodeAddress> addresses;
  for (const nlohmann::json& record : records) {
    if (!record.is_object() || !record.contains("writer") || !record["writer"].is_object()) continue;
    const nlohmann::json& writer = record["writer"];
    if (writer.value("by_contract", false)) continue;
    if (auto live = live_of(writer, "pc")) add_code_address(addresses, {"", std::nullopt, live});
  }
  return addresses;
}

}  // namespace xref::render
