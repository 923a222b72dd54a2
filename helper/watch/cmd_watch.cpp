// xref watch --pid PID ADDR[:LEN]...: every write to the ranges, with its
// writer, thread and old -> new, without stopping the process (docs/watch.md).
#include <iostream>
#include <memory>

#include "attach/stop_signals.h"
#include "mark/follower.h"
#include "output/json_envelope.h"
#include "output/output_queue.h"
#include "output/report.h"
#include "render/watch_text.h"
#include "watch/commands.h"
#include "watch/engine.h"
#include "watch/options.h"
#include "watch/output.h"
#include "watch/plan.h"
#include "watch/run.h"

namespace xref {
namespace {

int run_watch_command(const WatchCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "live_watch";
  if (auto valid = validate_watch_request(options.request); !valid) return report_early_error(options, envelope, valid.error());
  StopSignals signals;  // Ctrl-C from here on ends the watch, never the helper
  auto marks = follow_marks(options.request.mark_file, options.request.mark_regex);
  if (!marks) return report_early_error(options, envelope, marks.error());
  auto target = open_target({options.pid, options.bin});
  if (!target) return report_early_error(options, envelope, target.error());
  auto plan = plan_watch_ranges(*target, options.request);
  if (!plan) return report_early_error(options, envelope, plan.error());
  auto choice = choose_watch_backend(*plan, options.request);
  if (!choice) return report_early_error(options, envelope, choice.error());
  WatchRenderer renderer(*target, *plan, options.request);
  renderer.set_marks(marks->get());
  OutputQueue output(STDOUT_FILENO);
  WatchCallbacks callbacks;
  callbacks.cancel_fd = signals.fd();
  callbacks.attached = [&](const std::string& backend, size_t sites) {
    std::cerr << "xref: watching PID " << options.pid << ": " << plan->ranges.size() << " range"
              << (plan->ranges.size() == 1 ? "" : "s") << " (backend " << backend;
    if (backend == "stores") std::cerr << ", " << sites << " uprobes";
    std::cerr << "); stop with Ctrl-C" << std::endl;
  };
  callbacks.output_closed = [&] { return output.broken(); };
  if (options.jsonl) {
    callbacks.streamed = [&](const WatchRecord& record, const WatchRun& so_far) {
      output.push(json_text(renderer.record_json(record, &so_far)) + "\n", false);
    };
  }
  auto run = run_watch(*target, *plan, options.request, *choice, callbacks);
  if (!run) {
    output.finish(signals.fd());
    return report_early_error(options, envelope, run.error());
  }
  std::optional<Error> error;
  if (run->target_changed) {
    error = *run->target_changed;
    error->hint = "the probes went with the old executable; the writes before the exec are shown";
  }
  nlohmann::json document = renderer.document(*run);
  if (error) document["error"] = error_json(*error);
  if (options.json || options.jsonl) {
    if (options.jsonl) document["type"] = "result";
    output.push(json_text(document) + "\n", false);
  } else {
    std::string text;
    for (const std::string& line : render::watch_lines(document)) text += line + "\n";
    output.push(text, false);
  }
  output.finish(signals.fd());
  if (error && !options.json) std::cerr << error_line(*error) << std::endl;  // with its hint
  return error ? error_exit_status(error->code) : 0;
}

}  // namespace

void setup_watch(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<WatchCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "watch", "every write to a variable, struct or buffer - writer, thread, old -> new - without stopping the "
               "process (debug registers where they fire, else uprobes on the store instructions)");
  add_watch_options(*command, *options);
  command->callback([options, &exit_status] { exit_status = run_watch_command(*options); });
}

}  // namespace xref
