// Trace tests compare xref's windows with the ground truth trace_target
// records itself: per (thread, request), the traced functions it entered and
// left, in order, with argument and return values.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "require.h"
#include "run_xref.h"
#include "target_process.h"

namespace xref::test {

// One line of the record: "TID REQ > FUNC 0xARG..." / "< FUNC 0xRET" /
// "! FUNC" (unwound) / "~ FUNC" (tail exit).
struct RecordedEvent {
  char kind = '?';
  std::string function;
  std::vector<uint64_t> values;
};

using RequestKey = std::pair<uint32_t, uint64_t>;  // tid, request id

inline std::map<RequestKey, std::vector<RecordedEvent>> read_record(const std::string& path) {
  std::map<RequestKey, std::vector<RecordedEvent>> requests;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    uint32_t tid;
    uint64_t request;
    RecordedEvent event;
    std::string kind;
    if (!(fields >> tid >> request >> kind >> event.function)) continue;
    event.kind = kind[0];
    std::string value;
    while (fields >> value) event.values.push_back(std::stoull(value, nullptr, 16));
    requests[{tid, request}].push_back(event);
  }
  return requests;
}

// Waits (bounded) until the target has written the requests.
inline std::map<RequestKey, std::vector<RecordedEvent>> await_record(const std::string& path,
                                                                     const std::set<RequestKey>& wanted) {
  std::map<RequestKey, std::vector<RecordedEvent>> record;
  for (int attempt = 0; attempt < 200; ++attempt) {
    record = read_record(path);
    bool all = true;
    for (const auto& key : wanted) all &= record.count(key) > 0;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return record;
}

// "svc::settle(unsigned long)" -> "settle"
inline std::string plain_name(const std::string& symbol) {
  std::string name = symbol.substr(0, symbol.find('('));
  const size_t colons = name.rfind("::");
  return colons == std::string::npos ? name : name.substr(colons + 2);
}

// The record as the events xref should report for the traced functions:
// kind, plain function name and depth, one line each, for diffing.
inline std::vector<std::string> expected_events(const std::vector<RecordedEvent>& record,
                                                const std::set<std::string>& traced) {
  std::vector<std::string> events;
  int depth = 0;
  bool tail_pending = false;  // a traced function just left by a tail jump
  for (const RecordedEvent& event : record) {
    if (!traced.count(event.function)) continue;
    const bool tail_entry = tail_pending && event.kind == '>';
    tail_pending = event.kind == '~';
    switch (event.kind) {
      // The tail jump's target takes over the jumping function's frame.
      case '>':
        events.push_back(std::to_string(depth++) + " entry " + event.function + (tail_entry ? " [tail]" : ""));
        break;
      case '<': events.push_back(std::to_string(--depth) + " return " + event.function); break;
      case '!': events.push_back(std::to_string(--depth) + " unwound " + event.function); break;
      case '~': events.push_back(std::to_string(--depth) + " tail_exit " + event.function); break;
    }
  }
  return events;
}

// The same record as call-site mode reports it: a tail jump is an entry of
// the target marked [tail] at the jumping function's depth, and the return
// that follows, seen at the original call's return site, is the target's.
inline std::vector<std::string> expected_call_site_events(const std::vector<RecordedEvent>& record,
                                                          const std::set<std::string>& traced) {
  std::vector<std::string> events;
  std::vector<std::string> frames;  // the function each open frame returns as
  bool tail_pending = false;
  for (const RecordedEvent& event : record) {
    if (!traced.count(event.function)) continue;
    if (event.kind == '~') {
      tail_pending = true;
    } else if (event.kind == '>' && tail_pending) {
      // The jumping function's frame becomes the target's: same depth, no push.
      events.push_back(std::to_string(frames.size() - 1) + " entry " + event.function + " [tail]");
      if (!frames.empty()) frames.back() = event.function;
      tail_pending = false;
    } else if (event.kind == '>') {
      events.push_back(std::to_string(frames.size()) + " entry " + event.function);
      frames.push_back(event.function);
    } else if ((event.kind == '<' || event.kind == '!') && !frames.empty()) {
      const std::string name = frames.back();
      frames.pop_back();
      events.push_back(std::to_string(frames.size()) + (event.kind == '<' ? " return " : " unwound ") + name);
    }
  }
  return events;
}

// Filters a window to the named functions (call-site mode also reports the
// target's untraced helpers).
inline std::vector<std::string> window_events(const nlohmann::json& window,
                                              const std::set<std::string>* only = nullptr) {
  std::vector<std::string> events;
  for (const auto& event : window["events"]) {
    const std::string name = plain_name(event["symbol"].get<std::string>());
    if (only != nullptr && event["kind"] != "stop" && !only->count(name)) continue;
    std::string line = std::to_string(event["depth"].get<int>()) + " " + event["kind"].get<std::string>() + " " + name;
    if (event["kind"] == "entry" && event["tail_call"] == true) line += " [tail]";
    events.push_back(line);
  }
  return events;
}

inline uint64_t fetched(const nlohmann::json& fetches, const std::string& name) {
  for (const auto& fetch : fetches) {
    if (fetch["name"] == name) return std::stoull(fetch["value"].get<std::string>(), nullptr, 16);
  }
  throw std::runtime_error("no fetch named " + name);
}

// The (thread, request id) of each window of a trace document, the request
// id being the window's start fetch "id".
inline std::set<RequestKey> request_keys(const nlohmann::json& document) {
  std::set<RequestKey> keys;
  for (const auto& window : document["windows"]) {
    keys.insert({window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")});
  }
  return keys;
}

// One call in the sample service's --record file: "TID REQ FUNC ARG...".
struct SampleCall {
  std::string function;
  std::vector<uint64_t> args;
};

// The sample service's record as the file holds it now: per (thread,
// request), its calls in order. A worker writes a request's lines at once,
// after the request returned.
inline std::map<RequestKey, std::vector<SampleCall>> read_sample_record(const std::string& path) {
  std::map<RequestKey, std::vector<SampleCall>> requests;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    uint32_t tid;
    uint64_t request;
    SampleCall call;
    if (!(fields >> tid >> request >> call.function)) continue;
    std::string value;
    while (fields >> value) call.args.push_back(std::stoull(value, nullptr, 16));
    requests[{tid, request}].push_back(std::move(call));
  }
  return requests;
}

inline std::vector<std::string> call_names(const std::vector<SampleCall>& calls) {
  std::vector<std::string> names;
  for (const SampleCall& call : calls) names.push_back(call.function);
  return names;
}

// The sample service's record of the requests `wanted` (bounded wait until
// it has written them all): the functions each called, in order.
inline std::map<RequestKey, std::vector<std::string>> sample_record(const std::string& path,
                                                                    const std::set<RequestKey>& wanted) {
  std::map<RequestKey, std::vector<std::string>> recorded;
  for (int attempt = 0; attempt < 200; ++attempt) {
    recorded.clear();
    for (const auto& [key, calls] : read_sample_record(path)) {
      if (wanted.count(key)) recorded[key] = call_names(calls);
    }
    if (recorded.size() == wanted.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return recorded;
}

// The fetch tests read apply_fee's arguments (price, bps) at entry, its
// return (fee), and settle's return (ret, plus neg as s8). These give those
// values in order: as the record has them, and as a window fetched them.
inline std::vector<uint64_t> recorded_fee_values(const std::vector<RecordedEvent>& record) {
  std::vector<uint64_t> values;
  for (const auto& event : record) {
    if (event.function == "apply_fee" && event.kind == '>') values.insert(values.end(), {event.values[0], event.values[1]});
    if ((event.function == "apply_fee" || event.function == "settle") && event.kind == '<') {
      values.push_back(event.values[0]);
    }
  }
  return values;
}

inline std::vector<uint64_t> fetched_fee_values(const nlohmann::json& window) {
  std::vector<uint64_t> values;
  for (const auto& event : window["events"]) {
    const std::string name = plain_name(event["symbol"]);
    if (name == "apply_fee" && event["kind"] == "entry") {
      values.insert(values.end(), {fetched(event["fetches"], "price"), fetched(event["fetches"], "bps")});
    }
    if (name == "apply_fee" && event["kind"] == "return") values.push_back(fetched(event["fetches"], "fee"));
    if (name == "settle" && event["kind"] == "return") {
      const uint64_t value = fetched(event["fetches"], "ret");
      values.push_back(value);
      for (const auto& fetch : event["fetches"]) {
        if (fetch["name"] == "neg") {
          EXPECT_EQ(fetch["signed_value"].get<int64_t>(), static_cast<int8_t>(value));
        }
      }
    }
  }
  return values;
}

inline const std::set<std::string>& all_traced_functions() {
  static const std::set<std::string> names = {"handle_request", "validate", "compute_price", "apply_fee",
                                              "settle",         "risky",    "risky_inner",   "recover",
                                              "forward",        "finish",   "rendezvous",    "exit_now"};
  return names;
}

inline std::string functions_option(const std::set<std::string>& names) {
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "svc::" : ",svc::") + name;
  return list;
}

// The target's record file, removed when the test ends.
struct RecordFile {
  explicit RecordFile(const std::string& test)
      : path("/tmp/xref-trace-" + test + "-" + std::to_string(getpid()) + ".record") {
    unlink(path.c_str());
  }
  ~RecordFile() {
    unlink(path.c_str());
    unlink(go_file().c_str());
  }
  // trace_target --go-file: requests start once the tracer is attached.
  std::string go_file() const { return path + ".go"; }
  // Lets the target start its requests now, without waiting for a tracer.
  void release() const {
    if (FILE* go = fopen(go_file().c_str(), "w")) fclose(go);
  }
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  const std::string path;
};

// The target waits for its go file (created once xref is attached) before
// request 0, so no request runs unprobed however slow the machine is.
inline std::vector<std::string> target_command(const std::string& record, std::vector<std::string> extra) {
  std::vector<std::string> argv = {XREF_TRACE_TARGET, "--record", record, "--go-file", record + ".go",
                                   "--interval-us", "2000"};
  // Always a finite run: a test that dies must not leave a target writing
  // its record forever.
  if (std::find(extra.begin(), extra.end(), "--requests") == extra.end()) extra.insert(extra.end(), {"--requests", "500"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

inline bool bpf_usable() { return geteuid() == 0; }

// BPF links on the host whose program is `name` (xref's trace program is
// trace_probe, its probe program probe_hit), from bpftool's JSON: bpftool 7.1 names uprobe_multi links
// only by number ("type 12"), so the program name is what identifies them.
inline int program_links(const std::string& name) {
  const auto links = nlohmann::json::parse(command_output("bpftool -j link list"));
  int count = 0;
  for (const auto& link : links) {
    if (!link.contains("prog_id")) continue;
    const auto program = nlohmann::json::parse(
        command_output("bpftool -j prog show id " + std::to_string(link["prog_id"].get<uint64_t>()) +
                       " 2>/dev/null || echo '{}'"));
    if (program.value("name", "") == name) ++count;
  }
  return count;
}

inline int trace_program_links() { return program_links("trace_probe"); }

}  // namespace xref::test
