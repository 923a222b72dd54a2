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
#include "probe/commands.h"
#include "probe/output.h"
#include "probe/plan.h"
#include "probe/session.h"

namespace xref {
namespace {

constexpr uint64_t kMaxRecordsBound = 10000000;

struct ProbeCommandOptions : ProcessCommandOptions {
  ProbeRequest request;
  bool count = false;  // --count: hits are always counted
  bool jsonl = false;  // heartbeats as JSON lines, then the document as one line
};

Result<void> validate(const ProbeRequest& request) {
  if (request.backend != "auto" && request.backend != "uprobe_multi" && request.backend != "perf_uprobe") {
    return make_error(ErrorCode::invalid_argument, "--backend must be auto, uprobe_multi or perf_uprobe",
                      "probe's tracefs backend is not built yet");
  }
  if (request.every == 0) return make_error(ErrorCode::invalid_argument, "--every must be at least 1");
  return check_mark_options(request.mark_file, request.mark_regex);
}

int run_probe_command(const ProbeCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "live_probe";
  if (auto valid = validate(options.request); !valid) return report_early_error(options, envelope, valid.error());
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
  // Written through the bounded queue: a stalled reader costs output (a
  // heartbeat is dropped, counted), and a second Ctrl-C gives it up.
  OutputQueue output(STDOUT_FILENO);
  uint64_t heartbeats_dropped = 0;
  callbacks.heartbeat_ms = options.request.heartbeat_ms;
  callbacks.heartbeat = [&](uint64_t elapsed_ms, const std::vector<xref_probe_counts>& sites) {
    const nlohmann::json heartbeat = renderer.heartbeat_json(elapsed_ms, sites);
    if (options.json) {
      std::cerr << "xref: " << renderer.heartbeat_text(heartbeat) << std::flush;  // one document on stdout
      return;
    }
    const std::string line = options.jsonl ? json_text(heartbeat) + "\n" : renderer.heartbeat_text(heartbeat);
    if (!output.push(line, true)) ++heartbeats_dropped;
  };
  callbacks.output_closed = [&] { return output.broken(); };
  auto run = run_probe(*target, *plan, options.request, callbacks);
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
  ProbeRequest& request = options->request;
  CLI::App* command = app.add_subcommand(
      "probe", "bounded hit counts of addresses, with their callers, threads, fetched values and samples, counted "
               "in BPF without stopping the process");
  add_process_options(*command, *options);
  command->add_option("address", request.addresses,
                      "what to probe: a function (sym, module:sym) or any instruction start (0xVA, module:0xVA)")
      ->required();
  command->add_option("--backend", request.backend, "auto, uprobe_multi or perf_uprobe")->capture_default_str();
  command->add_flag("--count", options->count, "count hits (always done; the seed's spelling)");
  command->add_flag("--callers", request.callers,
                    "the call sites hits came from: exact at a function's entry, inferred from .eh_frame inside it");
  command->add_flag("--regs", request.regs, "samples carry every general register");
  command->add_option("--fetch", request.fetch, "values read at every hit, e.g. 'amount=+0x30(%cx):u64'")
      ->check(not_empty("a fetch spec", "--fetch 'amount=+0x30(%cx):u64'"));
  command->add_option("--filter", request.filter, "only hits where this holds over the fetched values pass, e.g. "
                                                  "'amount > 0'");
  command->add_option("--every", request.every, "sample every Nth passing hit of an address")
      ->capture_default_str()
      ->transform(number_in({1, kMaxRecordsBound}));
  command->add_option("--first", request.first, "keep the first N samples of each address (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  command->add_option("--until-hits", request.until_hits, "stop after N passing hits in all (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX / 2}));
  command->add_option("--max-events", request.max_events, "samples kept in all (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  add_duration_option(*command, request.duration_ms, "stop after this long (0: until a bound or Ctrl-C)");
  command->add_option("--group-by", request.group_by,
                      "count passing hits by ret (the function's return value at its rets), caller, tid, or a "
                      "fetched NAME");
  command->add_option("--hist", request.hist, "a log2 histogram of a fetched NAME");
  command->add_flag("--jsonl", options->jsonl,
                    "JSON lines: each heartbeat as it comes, then the result document as one line");
  command->add_option("--heartbeat-ms", request.heartbeat_ms,
                      "print a progress line this often: hits so far per address, rate, lost (0: none)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxDurationMs}));
  command->add_option("--mark-file", request.mark_file,
                      "a log followed during the probe: samples and heartbeats are stamped with its latest line "
                      "matching --mark-regex");
  command->add_option("--mark-regex", request.mark_regex,
                      "with --mark-file: the lines to stamp with (its first group, if any, is the mark shown)");
  add_ringbuf_option(*command, request.ringbuf_bytes, "sample ring buffer size, a power of two");
  command->callback([options, &exit_status] { exit_status = run_probe_command(*options); });
}

}  // namespace xref
