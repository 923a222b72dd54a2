#include "profile/capture_summary.h"

#include "xprof/file.h"

namespace xref {
namespace {

// The shell spelling of a path in the next command: quoted when it needs it.
std::string shell_word(const std::string& text) {
  if (text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+=:,@") ==
      std::string::npos) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

nlohmann::json capture_summary_json(const Capture& capture, const std::string& file) {
  const Profile& profile = capture.profile;
  const ProfileCaptureParameters& parameters = profile.capture;
  uint64_t whole = 0;
  uint64_t incomplete = 0;
  for (const auto& [name, samples] : profile.stack_ends) {
    auto end = stack_end_from_name(name);
    (end && stack_is_whole(*end) ? whole : incomplete) += samples;
  }
  // The threads, losses and stack ends as the file spells them.
  nlohmann::json file_document = xprof_json(profile);
  uint64_t started = 0;
  uint64_t exited = 0;
  for (const ProfileThread& thread : profile.threads) {
    started += thread.started_during_capture ? 1 : 0;
    exited += thread.exited_during_capture ? 1 : 0;
  }
  nlohmann::json tables = nlohmann::json::array();
  for (const nlohmann::json& module : file_document["modules"]) {
    tables.push_back({{"module", module["path"]},
                      {"build_id", module["build_id"]},
                      {"unwind_table", module["unwind_table"]},
                      {"unwind_rows", module["unwind_rows"]},
                      {"unwind_error", module["unwind_error"]}});
  }
  return {
      {"file", file},
      {"event", parameters.event},
      {"event_reason", parameters.event_reason},
      {"frequency_hz", parameters.frequency_hz},
      {"period_ns", parameters.period_ns},
      {"callers", parameters.callers},
      {"duration_ns", parameters.duration_ns},
      {"ended_by", parameters.ended_by},
      {"events_opened", capture.events_opened},
      {"coverage",
       "threads started during the capture are sampled from their first instruction (events inherited from the "
       "thread that created them)"},
      {"threads_started_during_capture", started},
      {"threads_exited_during_capture", exited},
      {"threads", std::move(file_document["threads"])},
      {"samples", profile.total_samples()},
      {"stacks", profile.stacks.size()},
      {"whole_samples", whole},
      {"incomplete_samples", incomplete},
      {"stack_ends", std::move(file_document["stack_ends"])},
      {"frames_walked", profile.frames_walked},
      {"losses", std::move(file_document["losses"])},
      {"event_count", capture.event_count},
      {"unwind_tables", std::move(tables)},
      {"unwind_rows_used", capture.table_rows_used},
      {"unwind_rows_capacity", capture.table_rows_capacity},
      {"complete", profile.complete()},
      {"next", "xref profile report " + shell_word(file)},
  };
}

}  // namespace xref
