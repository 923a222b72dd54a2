// xref trace --pid P --start FN [...]: ordered, thread-scoped call-trace
// windows (docs/trace.md).
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "attach/stop_signals.h"
#include "command/option_values.h"
#include "command/process_command.h"
#include "hex.h"
#include "mark/follower.h"
#include "output/output_queue.h"
#include "output/report.h"
#include "output/status_line.h"
#include "trace_abi.h"
#include "trace/commands.h"
#include "trace/options.h"
#include "trace/output.h"
#include "trace/plan.h"
#include "trace/progress.h"
#include "trace/session.h"
#include "trace/stream.h"

namespace xref {
namespace {

constexpr uint64_t kMaxWindowsBound = 1000000;
constexpr uint64_t kMaxEventsBound = 1000000000;

}  // namespace

Result<void> validate_trace_request(const TraceRequest& request) {
  if (request.max_windows > kMaxWindowsBound) {
    return make_error(ErrorCode::invalid_argument, "--max-windows is at most " + std::to_string(kMaxWindowsBound));
  }
  if (request.max_events > kMaxEventsBound) {
    return make_error(ErrorCode::invalid_argument, "--max-events is at most " + std::to_string(kMaxEventsBound));
  }
  if (auto ringbuf = check_ringbuf_bytes(request.ringbuf_bytes); !ringbuf) return ringbuf.error();
  if (!request.callees_of.empty() && !request.all_calls_in.empty()) {
    return make_error(ErrorCode::invalid_argument, "--callees-of and --all-calls-in exclude each other");
  }
  if ((!request.callees_of.empty() || !request.all_calls_in.empty()) && request.uretprobes) {
    return make_error(ErrorCode::invalid_argument, "--uretprobes applies to --functions mode only",
                      "call-site mode observes returns at return sites");
  }
  if (request.backend != "auto" && request.backend != "uprobe_multi" && request.backend != "perf_uprobe" &&
      request.backend != "tracefs") {
    return make_error(ErrorCode::invalid_argument, "--backend must be auto, uprobe_multi, perf_uprobe or tracefs");
  }
  if (request.here && !request.start.empty()) {
    return make_error(ErrorCode::invalid_argument, "--here and --start exclude each other",
                      "--here opens the window on the stopped thread; --start waits for a call");
  }
  if (!request.here && request.start.empty()) {
    // In a debugger a window can open on the stopped thread, or at a breakpoint's locations.
    return make_error(ErrorCode::invalid_argument, "--start is required",
                      request.debugger.present ? "name the function that opens a window (--start FUNCTION, or "
                                                 "--start bp:N at breakpoint N's locations), or open one on the "
                                                 "stopped thread now with --here"
                                               : "name the function that opens a window");
  }
  if (request.stop_at_end && !request.here) {
    return make_error(ErrorCode::invalid_argument, "--stop-at-end applies to --here only");
  }
  if (request.here && !request.debugger.here) {
    return make_error(ErrorCode::invalid_argument,
                      "--here needs a debugger: it opens the window on the stopped thread's current frame",
                      "use it inside lldb or gdb (docs/lldb.md); in a shell, use --start FUNCTION");
  }
  if (request.start.rfind("bp:", 0) == 0 && !request.debugger.present) {
    return make_error(ErrorCode::invalid_argument, "--start " + request.start + " names a debugger breakpoint",
                      "use it inside lldb or gdb; in a shell, use --start FUNCTION or a static VA");
  }
  if (auto marks = check_mark_options(request.mark_file, request.mark_regex); !marks) return marks.error();
  if (request.here && request.backend == "tracefs") {
    return make_error(ErrorCode::invalid_argument, "--here needs a BPF backend, not tracefs");
  }
  return {};
}

int run_trace_command(const TraceCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "live_trace";
  if (auto bounds = validate_trace_request(options.request); !bounds) return report_early_error(options, envelope, bounds.error());
  auto marks = follow_marks(options.request.mark_file, options.request.mark_regex);
  if (!marks) return report_early_error(options, envelope, marks.error());
  auto target = open_target({options.pid, options.bin});
  if (!target) return report_early_error(options, envelope, target.error());
  envelope.process = process_json(target->process.identity(), target->binary_match);
  auto plan = plan_trace(*target, options.request);
  if (!plan) return report_early_error(options, envelope, plan.error());

  TraceRenderer renderer(*target, *plan);
  renderer.set_marks(marks->get());
  renderer.set_addresses(options.addresses);
  const TraceFormat format = options.json ? TraceFormat::json : options.jsonl ? TraceFormat::jsonl : TraceFormat::text;
  // From here to the end, Ctrl-C and SIGTERM are read, not fatal: the first
  // ends the trace (everything detached, then the output), a later one the
  // wait for a reader that stopped reading.
  StopSignals signals;
  signal(SIGPIPE, SIG_IGN);  // a reader that went away is a failed write
  StatusLine status(STDERR_FILENO, !options.no_status);  // outlives the writer that holds it aside
  OutputQueue output(STDOUT_FILENO);
  if (status.shares_terminal(STDOUT_FILENO)) hold_aside_for(status, output);
  TraceStream stream(renderer, output, format);
  TraceCallbacks callbacks;
  callbacks.cancel_fd = signals.fd();
  callbacks.cancel_reason = "interrupted";
  callbacks.output_closed = [&] { return output.broken(); };
  callbacks.attached = [&](const TraceAttachInfo& attached) {
    std::cerr << "xref: tracing PID " << options.pid << ": " << attached.probes << " probes in "
              << plan->functions.size() << " functions (backend " << attached.backend << "); stop with Ctrl-C"
              << std::endl;
    stream.attached(attached.backend, envelope.process);
  };
  // Every shape writes a window as it closes, then lets it go.
  TraceProgress progress(options.request, marks->get());  // heartbeats and the status line
  callbacks.window_closed = [&](const TraceWindow& window) {
    progress.window_closed(window.events.size());
    stream.window_closed(window);
    return true;
  };
  uint64_t heartbeats_dropped = 0;
  callbacks.heartbeat_ms = options.request.heartbeat_ms;
  callbacks.heartbeat = [&](uint64_t elapsed_ms, const TraceCounters& counters) {
    const nlohmann::json heartbeat = progress.heartbeat_json(elapsed_ms, counters);
    if (format == TraceFormat::json) {
      status.print_above("xref: " + TraceProgress::heartbeat_text(heartbeat));  // one document on stdout
      return;
    }
    const std::string line =
        format == TraceFormat::jsonl ? json_text(heartbeat) + "\n" : TraceProgress::heartbeat_text(heartbeat);
    if (!output.push(line, true)) ++heartbeats_dropped;
  };
  if (status.active()) {
    callbacks.status_ms = kStatusPeriodMs;
    callbacks.status = [&](uint64_t elapsed_ms, const TraceCounters& counters) {
      status.show(progress.status_text(elapsed_ms, counters));
    };
  }
  auto run = run_trace(*target, *plan, options.request, callbacks);
  status.stop();
  if (!run) {
    if (stream.fail(run.error())) {
      output.finish(signals.fd());
      return error_exit_status(run.error().code);
    }
    output.finish(signals.fd());
    return report_early_error(options, envelope, run.error());
  }

  std::optional<Error> error;
  if (run->target_exited) {
    error = make_error(ErrorCode::process_exited,
                       "process " + std::to_string(options.pid) + " exited during the trace; windows still open are "
                                                                  "marked target_exited",
                       "the windows captured before the exit are shown");
  } else if (run->target_changed) {
    error = *run->target_changed;
    error->hint = "the probes went with the old executable; the windows captured before the exec are shown";
  }
  run->heartbeats_not_shown = heartbeats_dropped;
  stream.finish(*run, error);
  // Everything is detached by now: wait for the reader, unless told to stop.
  const OutputTotals totals = output.finish(signals.fd());
  if (totals.pieces_unwritten > 0 || totals.broken) {
    std::cerr << "xref: output cut short: " << totals.pieces_unwritten << " piece"
              << (totals.pieces_unwritten == 1 ? "" : "s") << " (" << totals.bytes_unwritten
              << " bytes) not written, " << (totals.broken ? "the reader went away" : "stopped while waiting for the reader")
              << std::endl;
  }
  if (error && format == TraceFormat::text) std::cerr << error_line(*error) << std::endl;
  return error ? error_exit_status(error->code) : 0;
}

void add_trace_options(CLI::App& command_app, TraceCommandOptions& options_ref) {
  CLI::App* command = &command_app;
  TraceCommandOptions* options = &options_ref;
  TraceRequest& request = options->request;
  add_process_options(*command, *options);
  command->add_flag("--jsonl", options->jsonl, "print each window as one JSON line as it closes, then a summary line");
  command->add_flag("--addresses", options->addresses,
                    "text: show each event's addresses (static VAs; live ones in a debugger) after its names");
  command->add_option("--start", request.start,
                      "function (name or static VA) whose call opens a window; in a debugger also bp:N, the "
                      "locations of breakpoint N");
  command->add_flag("--here", request.here,
                    "in a debugger: open a window on the stopped thread now, until its current frame returns "
                    "(default: --callees-of the current function --depth 2)");
  command->add_flag("--stop-at-end", request.stop_at_end, "with --here: stop the process when the window closes");
  command->add_flag("--allow-breakpoint-collision", request.allow_breakpoint_collision,
                    "in a debugger: allow probes on enabled breakpoint locations (the probe swallows the breakpoint)");
  command->add_option("--start-filter", request.start_filter,
                      "open a window only when this holds over the --fetch values, e.g. \"asset >= 100\"");
  command->add_option("--fetch", request.fetch, "values read at the start probe, e.g. \"id=+0(%di):u64\"")
      ->check(not_empty("a fetch spec", "--fetch 'id=+0(%di):u64'"));
  command->add_option("--stop", request.stop, "static VA (or function) that closes the window when hit");
  command->add_option("--stop-return", request.stop_return,
                      "function whose return closes the window (default: the --start function)");
  // Not split here: a comma inside a C++ name ("std::map<int, int>::find")
  // is part of it; the planner splits at top-level commas only.
  command->add_option("--functions", request.functions,
                      "functions to trace: names, globs ('set*', 'libc.so.6:str*') or static VAs, comma-separated "
                      "(commas inside <>, (), [], {} belong to the name); may repeat");
  command->add_option("--max-functions", request.max_functions,
                      "the most functions one --functions glob may match (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{XREF_TRACE_MAX_PROBES}));
  command->add_option("--callees-of", request.callees_of,
                      "trace the static callee tree of this function, at call and return sites");
  command->add_option("--depth", request.depth, "levels of the --callees-of tree (default 1; 2 with --here)")
      ->transform(number_in({1, 16}));
  command->add_option("--all-calls-in", request.all_calls_in,
                      "trace every call site (direct and indirect) in this function");
  command->add_option("--fetch-at", request.fetch_at, "VA SPEC: values read at that function's entry")
      ->type_size(2)
      ->check(not_empty("a function or a fetch spec", "--fetch-at validate 'n=%di:u64'"));
  command->add_option("--fetch-ret", request.fetch_ret, "VA SPEC: values read at that function's returns")
      ->type_size(2)
      ->check(not_empty("a function or a fetch spec", "--fetch-ret validate 'ok=%ax:u64'"));
  command->add_option("--max-windows", request.max_windows, "stop after this many windows (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxWindowsBound}));
  command->add_option("--max-events", request.max_events, "stop after this many events (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxEventsBound}));
  add_duration_option(*command, request.duration_ms, "stop after this long (0: no limit)");
  add_ringbuf_option(*command, request.ringbuf_bytes, "ring buffer size, a power of two (tracefs: per CPU)");
  command->add_option("--heartbeat-ms", request.heartbeat_ms,
                      "print a progress line this often: windows and events so far, rate, lost (0: none)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxDurationMs}));
  add_status_option(*command, options->no_status);
  command->add_option("--backend", request.backend,
                      "auto, uprobe_multi, perf_uprobe, or tracefs (uprobe_events, no BPF; never chosen by auto)")
      ->capture_default_str()
      ->check(one_of(kBackends));
  command->add_flag("--uretprobes", request.uretprobes,
                    "observe returns with uretprobes (best effort: breaks unwinding through traced frames)");
  command->add_option("--mark-file", request.mark_file,
                      "a log followed during the trace: each window is stamped with its latest line matching "
                      "--mark-regex when the window opened")
      ->type_name("FILE");
  command->add_option("--mark-regex", request.mark_regex,
                      "with --mark-file: the lines to stamp with (POSIX extended regex; its first group, if any, "
                      "is the mark shown)");
}

void setup_trace(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<TraceCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "trace", "ordered, thread-scoped call-trace windows: entries and returns of functions on the thread that "
               "hit --start, until the start call returns");
  add_trace_options(*command, *options);
  // The offline subcommands take no process: --pid is required only when
  // `trace` itself runs (checked here, with CLI11's own message).
  CLI::Option* pid = command->get_option("--pid");
  pid->required(false);
  CLI::App* export_command = setup_trace_export(*command, exit_status);
  CLI::App* diff_command = setup_trace_diff(*command, exit_status);
  CLI::App* show_command = setup_trace_show(*command, exit_status);
  command->callback([options, pid, export_command, diff_command, show_command, &exit_status] {
    if (export_command->parsed() || diff_command->parsed() || show_command->parsed()) return;
    if (pid->count() == 0) throw CLI::RequiredError("--pid");
    exit_status = run_trace_command(*options);
  });
}

}  // namespace xref
