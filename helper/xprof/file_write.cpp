// Writing a .xprof (docs/xprof.md): the Profile as one JSON document, in
// the order of the page, addresses as hex strings.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "input/user_files.h"
#include "output/json_envelope.h"
#include "xprof/file.h"

namespace xref {
namespace {

constexpr const char* kToolVersion = "0.1.0";

nlohmann::json module_index(uint32_t module) {
  return module == kNoModule ? nlohmann::json(nullptr) : nlohmann::json(module);
}

nlohmann::json capture_json(const ProfileCaptureParameters& capture) {
  return {{"event", capture.event},
          {"event_reason", capture.event_reason},
          {"frequency_hz", capture.frequency_hz},
          {"period_ns", capture.period_ns},
          {"callers", capture.callers},
          {"max_frames", capture.max_frames},
          {"started_unix_ns", capture.started_unix_ns},
          {"duration_ns", capture.duration_ns},
          {"threads_requested", capture.threads_requested},
          {"ended_by", capture.ended_by}};
}

nlohmann::json module_json(const ProfileModule& module) {
  nlohmann::json mappings = nlohmann::json::array();
  for (const ProfileMapping& mapping : module.mappings) {
    mappings.push_back({{"start", hex_value(mapping.start)},
                        {"end", hex_value(mapping.end)},
                        {"file_offset", hex_value(mapping.file_offset)}});
  }
  return {{"path", module.path},
          {"build_id", module.build_id},
          {"load_bias", hex_value(module.load_bias)},
          {"mappings", std::move(mappings)},
          {"unwind_table", module.unwind_table},
          {"unwind_rows", module.unwind_rows},
          {"unwind_error", module.unwind_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(module.unwind_error)}};
}


}  // namespace

nlohmann::json losses_json(const ProfileLosses& losses) {
  return {{"throttled", losses.throttled},
          {"stacks_full", losses.stacks_full},
          {"counts_full", losses.counts_full},
          {"requests_lost", losses.requests_lost},
          {"other_process", losses.other_process}};
}

nlohmann::json xprof_json(const Profile& profile) {
  nlohmann::json modules = nlohmann::json::array();
  for (const ProfileModule& module : profile.modules) modules.push_back(module_json(module));
  nlohmann::json functions = nlohmann::json::array();
  for (const ProfileFunction& function : profile.functions) {
    functions.push_back({{"module", module_index(function.module)},
                         {"name", function.name},
                         {"raw_name", function.raw_name},
                         {"start", hex_value(function.start)},
                         {"size", function.size}});
  }
  nlohmann::json locations = nlohmann::json::array();
  for (const ProfileLocation& location : profile.locations) {
    locations.push_back({{"module", module_index(location.module)},
                         {"address", hex_value(location.address)},
                         {"return_address", location.return_address},
                         {"function", location.function ? nlohmann::json(*location.function) : nlohmann::json(nullptr)}});
  }
  nlohmann::json stacks = nlohmann::json::array();
  for (const ProfileStack& stack : profile.stacks) {
    stacks.push_back({{"locations", stack.locations}, {"end", stack_end_name(stack.end)}, {"in_kernel", stack.in_kernel}});
  }
  nlohmann::json samples = nlohmann::json::array();
  for (const ProfileSample& sample : profile.samples) {
    samples.push_back({{"stack", sample.stack}, {"tid", sample.tid}, {"count", sample.count}});
  }
  nlohmann::json threads = nlohmann::json::array();
  for (const ProfileThread& thread : profile.threads) {
    threads.push_back({{"tid", thread.tid},
                       {"name", thread.name},
                       {"samples", thread.samples},
                       {"cpu_ns", thread.cpu_ns},
                       {"started_during_capture", thread.started_during_capture},
                       {"exited_during_capture", thread.exited_during_capture}});
  }
  nlohmann::json stack_ends = nlohmann::json::object();
  for (const auto& [name, count] : profile.stack_ends) stack_ends[name] = count;
  return {{"format", "xprof"},
          {"schema_version", kXprofSchemaVersion},
          {"tool", "xref"},
          {"tool_version", kToolVersion},
          {"process", profile.process},
          {"capture", capture_json(profile.capture)},
          {"modules", std::move(modules)},
          {"functions", std::move(functions)},
          {"locations", std::move(locations)},
          {"stacks", std::move(stacks)},
          {"samples", std::move(samples)},
          {"threads", std::move(threads)},
          {"losses", losses_json(profile.losses)},
          {"stack_ends", std::move(stack_ends)},
          {"frames_walked", profile.frames_walked},
          {"complete", profile.complete()},
          {"warnings", profile.warnings}};
}

Result<void> write_xprof(const Profile& profile, const std::string& path) {
  const std::string text = json_text(xprof_json(profile)) + "\n";
  // Whole or not at all: a reader never sees a file cut short by a failed write.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  auto out = open_user_file(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0644);
  if (!out) {
    Error error = out.error();
    error.message = "cannot write the capture: " + error.message;
    error.hint = "give --out a path in a directory you can write";
    return error;
  }
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t wrote = ::write(out->get(), text.data() + written, text.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const std::string reason = std::strerror(errno);
      ::unlink(temporary.c_str());
      return make_error(ErrorCode::file_error, "cannot write the capture " + temporary + ": " + reason,
                        "free some space, or give --out another path");
    }
    written += static_cast<size_t>(wrote);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    return make_error(ErrorCode::file_error, "cannot rename " + temporary + " to " + path + ": " + reason,
                      "give --out a path in a directory you can write");
  }
  return {};
}

}  // namespace xref
