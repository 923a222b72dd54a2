// xref profile --pid PID [--duration 10s] [--freq 99] [--callers dwarf|fp|lbr|none]
// [--event E] [--threads TID,...] [--out FILE]: samples every thread of the
// process into a .xprof capture (docs/profile.md).
#include <iostream>
#include <memory>

#include "attach/stop_signals.h"
#include "output/json_envelope.h"
#include "output/report.h"
#include "profile/capture.h"
#include "profile/capture_summary.h"
#include "profile/commands.h"
#include "profile/request.h"
#include "profile/sampling_events.h"
#include "render/profile_capture_text.h"
#include "render/profile_text.h"
#include "xprof/file.h"
#include "xprof/function_report.h"
#include "xprof/selection.h"

namespace xref {
namespace {

int run_profile_command(const ProfileCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "live_profile";
  const ProfileRequest& request = options.request;
  if (options.pid == 0) {
    return report_early_error(options, envelope,
                              make_error(ErrorCode::invalid_argument, "--pid is required",
                                         "give the process to sample: xref profile --pid PID, e.g. from `pgrep NAME`"));
  }
  if (auto valid = validate_profile_request(request); !valid) return report_early_error(options, envelope, valid.error());
  if (request.callers == "lbr") return report_early_error(options, envelope, lbr_refusal());
  if (auto frequency = check_sampling_frequency(request.frequency_hz); !frequency) {
    return report_early_error(options, envelope, frequency.error());
  }
  auto event = choose_sampling_event(request.event);
  if (!event) return report_early_error(options, envelope, event.error());
  StopSignals signals;  // Ctrl-C from here on ends the capture, never the helper
  auto target = open_target({options.pid, options.bin});
  if (!target) return report_early_error(options, envelope, target.error());
  envelope.warnings = target->warnings;
  CaptureCallbacks callbacks;
  callbacks.cancel_fd = signals.fd();
  callbacks.attached = [&](size_t events) {
    if (options.json) return;
    std::cerr << "xref: profiling PID " << options.pid << ": " << event->name << " at " << request.frequency_hz
              << " Hz on " << events << " thread" << (events == 1 ? "" : "s") << ", callers " << request.callers
              << "; stop with Ctrl-C" << std::endl;
  };
  auto capture = run_capture(*target, request, *event, callbacks);
  if (!capture) {
    envelope.process = process_json_after(*target);
    if (auto alive = target->process.recheck(); !alive) return report_early_error(options, envelope, alive.error());
    return report_early_error(options, envelope, capture.error());
  }
  envelope.process = capture->profile.process;
  if (auto written = write_xprof(capture->profile, request.out); !written) {
    return report_early_error(options, envelope, written.error());
  }
  envelope.data = capture_summary_json(*capture, request.out);
  for (const std::string& warning : capture->profile.warnings) envelope.warnings.push_back(warning);
  if (capture->profile.total_samples() == 0) {
    envelope.warnings.push_back("no samples: the sampled threads used no CPU while the capture ran");
  }
  if (capture->target_changed) {
    Error error = *capture->target_changed;
    error.hint = "the events went with the old executable; the samples before the exec are in " + request.out;
    envelope.error = error;
  }
  const nlohmann::json process = envelope.process;
  const nlohmann::json data = envelope.data;
  return report({options.json}, envelope, [&](std::ostream& out) {
    for (const std::string& line : render::profile_capture_lines(process, data)) out << line << "\n";
    // The ten hottest functions, as `report --by function --top 10` prints them.
    if (auto selection = select_samples(capture->profile); selection && selection->samples != 0) {
      out << "\n";
      for (const std::string& line :
           render::function_report_lines(function_rows(capture->profile, *selection), *selection, 10)) {
        out << line << "\n";
      }
    }
  });
}

}  // namespace

void setup_profile(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<ProfileCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "profile", "where a process spends its CPU time: samples every thread, with whole stacks unwound in BPF "
                 "(no frame pointers needed), into a .xprof capture; reports, annotate, diff, flame graphs");
  add_profile_options(*command, *options);
  // The offline subcommands take a file, not --pid: --pid is required of
  // the capture only (checked when it runs).
  command->get_option("--pid")->required(false);
  setup_profile_offline(*command, exit_status);
  command->callback([command, options, &exit_status] {
    if (!command->get_subcommands().empty()) return;
    exit_status = run_profile_command(*options);
  });
}

}  // namespace xref
