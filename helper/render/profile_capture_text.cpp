#include "render/profile_capture_text.h"

#include <cstdio>

#include "render/duration.h"
#include "render/json_fields.h"
#include "render/process_name.h"

namespace xref::render {
namespace {

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0 %";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// "complete 3958, table_pending 2": the counts of the names in `ends` that
// are (or are not) whole.
std::string ends_text(const nlohmann::json& ends, bool whole) {
  std::string text;
  for (const auto& [name, samples] : ends.items()) {
    const bool is_whole = name == "complete" || name == "leaf_only";
    if (is_whole != whole || !samples.is_number_unsigned()) continue;
    if (!text.empty()) text += ", ";
    text += name + " " + std::to_string(samples.get<uint64_t>());
  }
  return text;
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string tables_text(const nlohmann::json& tables) {
  std::string loaded;
  std::string other;
  uint64_t not_needed = 0;
  for (const nlohmann::json& table : tables) {
    const std::string state = text_at(table, "unwind_table");
    const std::string name = base_name(text_at(table, "module"));
    if (state == "not_needed") {
      ++not_needed;
    } else if (state == "loaded") {
      if (!loaded.empty()) loaded += ", ";
      loaded += name + " " + plural(count_or_zero(table, "unwind_rows"), "row");
    } else if (state != "not_used") {
      if (!other.empty()) other += ", ";
      other += name + " " + state;
      if (table.contains("unwind_error") && table["unwind_error"].is_string()) {
        other += " (" + table["unwind_error"].get<std::string>() + ")";
      }
    }
  }
  std::string text = loaded.empty() ? "none loaded" : loaded;
  if (!other.empty()) text += "; " + other;
  if (not_needed != 0) text += "; " + plural(not_needed, "module") + " no sample reached (no table needed)";
  return text;
}

}  // namespace

std::vector<std::string> profile_capture_lines(const nlohmann::json& process, const nlohmann::json& data) {
  std::vector<std::string> lines;
  const std::string name = process_name(text_at(process, "comm"), text_at(process, "exe_path"));
  lines.push_back("profile of PID " + std::to_string(count_or_zero(process, "pid")) + " (" + name + "): " +
                  text_at(data, "event") + " at " + std::to_string(count_or_zero(data, "frequency_hz")) + " Hz (" +
                  text_at(data, "event_reason") + "), callers " + text_at(data, "callers"));
  const uint64_t period = count_or_zero(data, "period_ns");
  lines.push_back("  sampled " + duration_text(count_or_zero(data, "duration_ns")) + ", ended by " +
                  text_at(data, "ended_by") +
                  (period != 0 ? "; one sample = " + duration_text(period) + " of a thread's CPU" : std::string()));
  const nlohmann::json& threads = array_at(data, "threads");
  lines.push_back("  threads: " + std::to_string(threads.size()) + " (" +
                  plural(count_or_zero(data, "events_opened"), "event") + " opened; " +
                  std::to_string(count_or_zero(data, "threads_started_during_capture")) + " started and " +
                  std::to_string(count_or_zero(data, "threads_exited_during_capture")) +
                  " exited during the capture: later threads inherit the events)");
  for (const nlohmann::json& thread : threads) {
    std::string line = "    " + std::to_string(count_or_zero(thread, "tid")) + " " + text_at(thread, "name") + ": " +
                       plural(count_or_zero(thread, "samples"), "sample") + ", " +
                       duration_text(count_or_zero(thread, "cpu_ns")) + " CPU";
    if (thread.value("started_during_capture", false)) line += ", started during the capture";
    if (thread.value("exited_during_capture", false)) line += ", exited";
    lines.push_back(line);
  }
  const uint64_t samples = count_or_zero(data, "samples");
  const uint64_t whole = count_or_zero(data, "whole_samples");
  const uint64_t incomplete = count_or_zero(data, "incomplete_samples");
  const nlohmann::json& ends = object_at(data, "stack_ends");
  lines.push_back("  samples: " + std::to_string(samples) + " in " + plural(count_or_zero(data, "stacks"), "stack") +
                  "; " + plural(count_or_zero(data, "frames_walked"), "frame") + " walked");
  std::string stacks = "  stacks whole: " + std::to_string(whole) + " (" + percent(whole, whole + incomplete) + ")";
  if (whole != 0) stacks += ": " + ends_text(ends, true);
  lines.push_back(stacks);
  if (incomplete != 0) {
    lines.push_back("  stacks incomplete: " + std::to_string(incomplete) + " (" +
                    percent(incomplete, whole + incomplete) + "): " + ends_text(ends, false));
  }
  const nlohmann::json& losses = object_at(data, "losses");
  lines.push_back("  lost: throttled " + std::to_string(count_or_zero(losses, "throttled")) + ", stacks map full " +
                  std::to_string(count_or_zero(losses, "stacks_full")) + ", counts map full " +
                  std::to_string(count_or_zero(losses, "counts_full")) + ", table requests lost " +
                  std::to_string(count_or_zero(losses, "requests_lost")) + "; samples of other processes " +
                  std::to_string(count_or_zero(losses, "other_process")));
  if (text_at(data, "callers") == "dwarf") {
    lines.push_back("  unwind tables: " + tables_text(array_at(data, "unwind_tables")));
  }
  lines.push_back(std::string("  ") + (data.value("complete", false) ? "complete" : "not complete") +
                  ": written to " + text_at(data, "file"));
  lines.push_back("next: " + text_at(data, "next"));
  return lines;
}

}  // namespace xref::render
