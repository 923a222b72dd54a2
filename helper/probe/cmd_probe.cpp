// xref probe --pid PID ADDR...: bounded hit counts, callers, groups and
// samples of the named addresses, counted in BPF (docs/probe.md).
#include <iostream>
#include <memory>
#include <sstream>

#include "attach/stop_signals.h"
#include "command/option_values.h"
#include "command/process_command.h"
#include "output/json_envelope.h"
#include "output/output_queue.h"
#include "output/report.h"
#include "output/status_line.h"
#include "probe/commands.h"
#include "probe/options.h"
#include "probe/output.h"
#include "probe/plan.h"
#include "probe/session.h"
#include "probe/status_text.h"

namespace xref {
namespace {

int run_probe_command(const ProbeCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "live_probe";
  if (auto valid = validate_probe_request(options.request); !valid) return report_early_error(options, envelope, valid.error());
  StopSignals signals;  // Ctrl-C from here on ends the probe, never the helper
  auto marks = follow_marks(options.request.mark_file, options.request.mark_regex);
  if (!marks) return report_early_error(options, envelope, marks.error());
  auto target = open_target({options.pid, options.bin});
  if (!target) return report_early_error(options, envelope, target.error());
  auto plan = plan_probe(*target, options.request);
  if (!plan) return report_early_error(options, envelope, plan.error());
  ProbeCallbacks callbacks;
  callbacks.cancel_fd = signals.fd();
  callbacks.cancel_reason = "interrupted";
  callbacks.attached = [&](const std::string& backend, size_t sites) {
    std::cerr << "xref: probing PID " << options.pid << ": " << plan->addresses.size() << " address"
              << (plan->addresses.size() == 1 ? "" : "es") << " at " << sites << " site" << (sites == 1 ? "" : "s")
              << " (backend " << backend << "); stop with Ctrl-C" << std::endl;
  };
  ProbeRenderer renderer(*target, *plan, options.request);
  renderer.set_marks(marks->get());
  StatusLine status(STDERR_FILENO, !options.no_status);  // outlives the writer that holds it aside
  // Written through the bounded queue: a stalled reader costs output (a
  // heartbeat is dropped, counted), and a second Ctrl-C gives it up.
  OutputQueue output(STDOUT_FILENO);
  if (status.shares_terminal(STDOUT_FILENO)) hold_aside_for(status, output);
  ProbeStatus status_text(*plan, options.request);
  if (status.active()) {
    callbacks.status_ms = kStatusPeriodMs;
    callbacks.status = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
      status.show(status_text.text(elapsed_ms, sites));
    };
  }
  uint64_t heartbeats_dropped = 0;
  callbacks.heartbeat_ms = options.request.heartbeat_ms;
  callbacks.heartbeat = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
    const nlohmann::json heartbeat = renderer.heartbeat_json(elapsed_ms, sites);
    if (options.json) {
      status.print_above("xref: " + renderer.heartbeat_text(heartbeat));  // one document on stdout
      return;
    }
    const std::string line = options.jsonl ? json_text(heartbeat) + "\n" : renderer.heartbeat_text(heartbeat);
    if (!output.push(line, true)) ++heartbeats_dropped;
  };
  callbacks.output_closed = [&] { return output.broken(); };
  auto run = run_probe(*target, *plan, options.request, callbacks);
  status.stop();
  if (!run) {
    output.finish(signals.fd());
    return report_early_error(options, envelope, run.error());
  }
  std::optional<Error> error;
  if (run->target_exited) {
    error = make_error(ErrorCode::process_exited,
                       "process " + std::to_string(options.pid) + " exited during the probe",
                       "the counts up to its exit are shown");
  } else if (run->target_changed) {
    error = *run->target_changed;
    error->hint = "the probes went with the old executable; the counts before the exec are shown";
  }
  if (options.json || options.jsonl) {
    nlohmann::json document = renderer.document(*run);
    if (error) document["error"] = error_json(*error);
    document["summary"]["heartbeats_not_shown"] = heartbeats_dropped;
    if (options.jsonl) document["type"] = "result";
    output.push(json_text(document) + "\n", false);
  } else {
    std::ostringstream text;
    renderer.print_text(text, *run);
    output.push(text.str(), false);
  }
  output.finish(signals.fd());
  if (error && !options.json) std::cerr << "xref: error: " << error->message << std::endl;
  return error ? error_exit_status(error->code) : 0;
}

}  // namespace

void setup_probe(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<ProbeCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "probe", "bounded hit counts of addresses, with their callers, threads, fetched values and samples, counted "
               "in BPF without stopping the process");
  add_probe_options(*command, *options);
  command->callback([options, &exit_status] { exit_status = run_probe_command(*options); });
}

}  // namespace xref
