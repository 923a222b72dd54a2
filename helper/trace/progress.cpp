#include "trace/progress.h"

#include <cstdio>
#include <vector>

#include "monotonic_clock.h"
#include "output/json_envelope.h"

namespace xref {

nlohmann::json TraceProgress::heartbeat_json(uint64_t elapsed_ms, const TraceCounters& counters) {
  const double seconds = static_cast<double>(elapsed_ms - last_heartbeat_ms_) / 1000.0;
  const double rate = seconds > 0 ? static_cast<double>(windows_ - last_windows_) / seconds : 0.0;
  last_heartbeat_ms_ = elapsed_ms;
  last_windows_ = windows_;
  nlohmann::json heartbeat = {
      {"type", "heartbeat"},
      {"elapsed_ms", elapsed_ms},
      {"windows", windows_},
      {"windows_open",
       counters.windows_opened > counters.windows_closed ? counters.windows_opened - counters.windows_closed : 0},
      {"windows_per_s", rate},
      {"events", events_},
      {"lost_events", counters.lost_events},
  };
  if (marks_ != nullptr) add_mark_json(heartbeat, marks_->stamp(monotonic_ns()));
  return heartbeat;
}

std::string TraceProgress::heartbeat_text(const nlohmann::json& heartbeat) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", heartbeat["windows_per_s"].get<double>());
  std::string line = "heartbeat " + std::to_string(heartbeat["elapsed_ms"].get<uint64_t>()) + " ms  " +
                     std::to_string(heartbeat["windows"].get<uint64_t>()) + " windows (" + rate + "/s)  " +
                     std::to_string(heartbeat["events"].get<uint64_t>()) + " events  lost " +
                     std::to_string(heartbeat["lost_events"].get<uint64_t>());
  if (heartbeat.contains("mark") && !heartbeat["mark"].is_null()) line += "  mark " + json_text(heartbeat["mark_match"]);
  return line + "\n";
}

std::string TraceProgress::status_text(uint64_t elapsed_ms, const TraceCounters& counters) {
  rate_.add(elapsed_ms, windows_);
  std::vector<std::string> bounds;
  if (request_.max_windows > 0) bounds.push_back(grouped_number(request_.max_windows) + " windows");
  if (request_.max_events > 0) bounds.push_back(grouped_number(request_.max_events) + " events");
  const auto per_second = static_cast<uint64_t>(rate_.per_second() + 0.5);
  return "xref: " + status_seconds(elapsed_ms) + "  " + grouped_number(windows_) + " windows (" +
         grouped_number(per_second) + "/s)  " + grouped_number(events_) + " events  lost " +
         grouped_number(counters.lost_events) + "  " + status_stop_text(request_.duration_ms, bounds);
}

}  // namespace xref
