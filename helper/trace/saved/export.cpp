#include "trace/saved/export.h"

#include <set>
#include <string>
#include <vector>

namespace xref {
namespace {

double microseconds(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

uint64_t timestamp_of(const nlohmann::json& object, const char* key, uint64_t fallback) {
  return object.contains(key) && object[key].is_number_unsigned() ? object[key].get<uint64_t>() : fallback;
}

nlohmann::json fetch_args(const nlohmann::json& fetches) {
  nlohmann::json args = nlohmann::json::object();
  if (!fetches.is_array()) return args;
  for (const auto& fetch : fetches) {
    const auto name = fetch.find("name");
    args[name != fetch.end() && name->is_string() ? name->get<std::string>() : "?"] = saved_fetch_value(fetch);
  }
  return args;
}

// A call whose entry was seen and whose end is not yet known.
struct OpenSlice {
  int depth = 0;
  uint64_t begin_ns = 0;
  nlohmann::json event;  // the "X" event, without dur
};

class WindowSlicer {
 public:
  WindowSlicer(nlohmann::json& out, int pid, uint32_t tid) : out_(out), pid_(pid), tid_(tid) {}

  void entry(const nlohmann::json& event, uint64_t now) {
    const int depth = event.value("depth", 0);
    // A tail entry (call-site mode) replaces the frame at its depth.
    close_from(depth, now, event.value("tail_call", false) ? "tail" : "unmatched");
    OpenSlice slice;
    slice.depth = depth;
    slice.begin_ns = now;
    std::string name = event.value("symbol", "");
    if (name.empty()) name = event.value("target_va", "?");
    nlohmann::json args = fetch_args(event.value("fetches", nlohmann::json()));
    for (const char* key : {"target_va", "call_site_va", "module"}) {
      if (event.contains(key)) args[key] = event[key];
    }
    if (event.value("tail_call", false)) args["tail_call"] = true;
    slice.event = {{"name", name}, {"cat", "call"}, {"ph", "X"}, {"pid", pid_}, {"tid", tid_},
                   {"ts", microseconds(now)}, {"args", args}};
    open_.push_back(std::move(slice));
  }

  // return, tail_exit, unwound: the frame at the event's depth ends.
  void exit(const nlohmann::json& event, uint64_t now) {
    const int depth = event.value("depth", 0);
    const std::string kind = event.value("kind", "");
    close_from(depth + 1, now, "unmatched");
    if (open_.empty() || open_.back().depth != depth) return;
    OpenSlice& slice = open_.back();
    const nlohmann::json returned = fetch_args(event.value("fetches", nlohmann::json()));
    if (!returned.empty()) slice.event["args"]["return"] = returned;
    if (kind == "tail_exit") slice.event["args"]["closed_by"] = "tail";
    if (kind == "unwound") slice.event["args"]["closed_by"] = "unwound";
    close_top(now);
  }

  // Frames open at the window's end: closed there, named by the window status.
  void finish(uint64_t end_ns, const std::string& status) { close_from(0, end_ns, status); }

 private:
  void close_top(uint64_t end_ns) {
    OpenSlice& slice = open_.back();
    slice.event["dur"] = microseconds(end_ns >= slice.begin_ns ? end_ns - slice.begin_ns : 0);
    out_.push_back(std::move(slice.event));
    open_.pop_back();
  }

  void close_from(int depth, uint64_t end_ns, const std::string& reason) {
    while (!open_.empty() && open_.back().depth >= depth) {
      if (!open_.back().event["args"].contains("closed_by")) open_.back().event["args"]["closed_by"] = reason;
      close_top(end_ns);
    }
  }

  nlohmann::json& out_;
  int pid_;
  uint32_t tid_;
  std::vector<OpenSlice> open_;
};

void add_window(nlohmann::json& out, int pid, const nlohmann::json& window) {
  const uint32_t tid = window.value("tid", 0u);
  const nlohmann::json& events = window.contains("events") ? window["events"] : nlohmann::json::array();
  uint64_t last_ns = timestamp_of(window, "start_timestamp_ns", 0);
  const uint64_t start_ns = last_ns;
  WindowSlicer slicer(out, pid, tid);
  for (const auto& event : events) {
    const uint64_t now = timestamp_of(event, "timestamp_ns", last_ns);
    last_ns = std::max(last_ns, now);
    const std::string kind = event.value("kind", "");
    if (kind == "entry") {
      slicer.entry(event, now);
    } else if (kind == "return" || kind == "tail_exit" || kind == "unwound") {
      slicer.exit(event, now);
    }
  }
  const uint64_t end_ns = std::max(last_ns, timestamp_of(window, "end_timestamp_ns", last_ns));
  const std::string status = window.value("status", "complete");
  slicer.finish(end_ns, status == "complete" ? "unmatched" : status);

  nlohmann::json args = fetch_args(window.value("start_fetches", nlohmann::json()));
  args["status"] = status;
  args["possible_loss"] = window.value("possible_loss", false);
  for (const char* key : {"start_va", "stop_va", "lost_events"}) {
    if (window.contains(key)) args[key] = window[key];
  }
  out.push_back({{"name", "window " + std::to_string(window.value("window_id", 0))},
                 {"cat", "window"}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
                 {"ts", microseconds(start_ns)}, {"dur", microseconds(end_ns - start_ns)}, {"args", args}});
}

int pid_of(const nlohmann::json& process) {
  const auto pid = process.find("pid");
  return pid != process.end() && pid->is_number_integer() ? pid->get<int>() : 0;
}

// The process and thread names, after every window.
nlohmann::json metadata_events(int pid, const std::set<uint32_t>& tids) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "pid " + std::to_string(pid)}}}});
  for (uint32_t tid : tids) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"name", "tid " + std::to_string(tid)}}}});
  }
  return events;
}

}  // namespace

nlohmann::json chrome_trace(const TraceFile& file) {
  const int pid = pid_of(file.process);
  nlohmann::json events = nlohmann::json::array();
  std::set<uint32_t> tids;
  for (const auto& window : file.windows) {
    tids.insert(window.value("tid", 0u));
    add_window(events, pid, window);
  }
  for (auto& event : metadata_events(pid, tids)) events.push_back(std::move(event));
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

Result<void> write_chrome_trace(const SavedTrace& trace, std::ostream& out) {
  const int pid = pid_of(trace.process());
  // As chrome_trace(...).dump() writes it, one window at a time.
  out << R"({"displayTimeUnit":"ns","traceEvents":[)";
  const char* comma = "";
  auto write = [&](const nlohmann::json& events) {
    for (const auto& event : events) {
      out << comma << event.dump();
      comma = ",";
    }
  };
  std::set<uint32_t> tids;
  auto read = trace.read_windows(trace.every_window(), [&](size_t, nlohmann::json&& window) -> Result<void> {
    tids.insert(window.value("tid", 0u));
    nlohmann::json events = nlohmann::json::array();
    add_window(events, pid, window);
    write(events);
    return {};
  });
  if (!read) return read.error();
  write(metadata_events(pid, tids));
  out << "]}\n";
  return {};
}

}  // namespace xref
