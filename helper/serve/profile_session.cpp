// A profile session of `xref serve` (docs/profile.md, "In a debugger"): the
// capture runs on the session's thread while the debugger lets the process
// run; a drain sent at a debugger stop ends it there ("until_stop"), as
// does its --duration, `xref stop` or the target's exit. Sampling is perf
// events and BPF only: no code of the process is touched, so breakpoints
// set meanwhile work as ever. Its capture goes to --out or to a file of
// the helper's (CaptureFiles); session_ended's document carries the
// capture's summary and its hottest functions, each with the live address
// the debugger is asked to name.
#include <memory>
#include <string>

#include "output/json_envelope.h"
#include "process/target.h"
#include "profile/capture.h"
#include "profile/capture_summary.h"
#include "profile/capture_top.h"
#include "profile/sampling_events.h"
#include "serve/session.h"
#include "serve/sessions.h"
#include "xprof/file.h"

namespace xref::serve {
namespace {

// The functions a stop shows, as the CLI's summary does.
constexpr size_t kTopFunctions = 10;

}  // namespace

void SessionManager::run_profile_session(std::shared_ptr<Session> session, nlohmann::json request_id, SessionSpec spec) {
  ProfileRequest request = spec.profile.request;
  bool attached = false;
  auto fail = [&](const Error& error) { this->fail(*session, request_id, attached, error, {{"document", nullptr}}); };
  try {
    auto event = choose_sampling_event(request.event);
    if (!event) return fail(event.error());
    if (request.out.empty()) {
      auto path = captures_.path_for(session->id);
      if (!path) return fail(path.error());
      request.out = *path;
    }
    auto target = open_target({spec.process().pid, spec.process().bin});
    if (!target) return fail(target.error());

    CaptureCallbacks callbacks;
    callbacks.cancel_fd = session->cancel_fd;
    callbacks.cancel_reason = "stopped";
    callbacks.drain_fd = session->drain_fd;
    callbacks.drained = [&]() -> std::optional<std::string> {
      // At a debugger stop the capture ends: its samples are the time since it began.
      if (session->stop_drain.exchange(false)) {
        answer_drains(*session, true);
        return "until_stop";
      }
      answer_drains(*session, false);
      return std::nullopt;
    };
    callbacks.attached = [&](size_t events) {
      session->attached(event->name);
      writer_.write(result_response(request_id, {{"session", session->id},
                                                 {"command", "profile"},
                                                 {"backend", event->name},
                                                 {"event", event->name},
                                                 {"event_reason", event->reason},
                                                 {"frequency_hz", request.frequency_hz},
                                                 {"callers", request.callers},
                                                 {"threads", events},
                                                 {"duration_ms", request.duration_ms},
                                                 {"out", request.out},
                                                 {"probe_sites", nlohmann::json::array()},
                                                 {"warnings", target->warnings},
                                                 {"breakpoints_to_disable", nlohmann::json::array()},
                                                 {"stop_signal", nullptr},
                                                 {"process", process_json(target->process.identity(),
                                                                          target->binary_match)}}));
      attached = true;
    };
    auto capture = run_capture(*target, request, *event, callbacks);
    if (!capture) return fail(capture.error());
    // A drain that came as the capture ended by itself is answered now.
    answer_drains(*session, false);
    const std::string stop_reason = end_reason(*session, capture->profile.capture.ended_by == "process_changed"
                                                             ? std::string("target_changed")
                                                             : capture->profile.capture.ended_by);
    std::optional<Error> error = capture->target_changed;
    if (auto written = write_xprof(capture->profile, request.out); !written) {
      error = written.error();
    } else {
      captures_.written(request.out);
    }
    if (capture->profile.capture.ended_by == "target_exited") {
      error = make_error(ErrorCode::process_exited, "process " + std::to_string(spec.profile.pid) +
                                                        " exited during the capture; its samples until then are kept");
    }
    nlohmann::json data = capture_summary_json(*capture, request.out);
    std::vector<std::string> warnings = capture->profile.warnings;
    if (capture->profile.total_samples() == 0) {
      warnings.push_back("no samples: the sampled threads used no CPU while the capture ran");
    }
    {
      std::lock_guard lock(session->mutex);
      session->events = capture->profile.total_samples();
    }
    nlohmann::json document = {{"operation", "live_profile"},
                               {"process", capture->profile.process},
                               {"data", data},
                               {"top", capture_top_json(capture->profile, kTopFunctions)},
                               {"warnings", warnings}};
    const nlohmann::json summary = {{"samples", capture->profile.total_samples()},
                                    {"events", capture->profile.total_samples()},
                                    {"duration_ns", capture->profile.capture.duration_ns},
                                    {"file", request.out}};
    end_with_document(*session, stop_reason, error, document, summary);
  } catch (const std::exception& failure) {
    fail(make_error(ErrorCode::internal, std::string("session failed: ") + failure.what()));
  }
}

}  // namespace xref::serve
