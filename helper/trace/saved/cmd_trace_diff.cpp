// xref trace diff A B [--window N] [--window-b M] [--json]
// [--allow-build-mismatch] [--context N] [--addresses]: two saved windows aligned call by
// call; offline. Exit status as diff(1): 0 equal, 1 different, 2 trouble.
#include <iostream>
#include <memory>

#include "command/option_values.h"
#include "output/json_envelope.h"
#include "output/report.h"
#include "trace/commands.h"
#include "trace/saved/diff.h"
#include "trace/saved/diff_output.h"
#include "trace/saved/file.h"

namespace xref {
namespace {

constexpr int kEqual = 0;
constexpr int kDifferent = 1;
constexpr int kTrouble = 2;

struct TraceDiffOptions {
  std::string file_a;
  std::string file_b;
  uint64_t window = 0;
  uint64_t window_b = 0;
  bool window_given = false;
  bool window_b_given = false;
  bool json = false;
  bool allow_build_mismatch = false;
  size_t context = kDefaultDiffContext;
  bool addresses = false;
};

// Every error is status 2, whatever its code: 1 already means "different".
int fail(const TraceDiffOptions& options, const Error& error) {
  if (options.json) {
    Envelope envelope;
    envelope.operation = "trace_diff";
    envelope.error = error;
    nlohmann::json document = envelope_json(envelope);
    document["error"]["exit_status"] = kTrouble;
    std::cout << json_text(document) << std::endl;
  } else {
    std::cerr << error_line(error) << std::endl;
  }
  return kTrouble;
}

// The selected window of an opened file: by id, or the first one; only it
// is read back.
Result<DiffSide> side_of(const std::string& path, const SavedTrace& file, bool by_id, uint64_t id) {
  const std::optional<size_t> index = by_id ? file.find_window(id) : std::optional<size_t>(0);
  if (!index) {
    return make_error(ErrorCode::invalid_argument, path + " has no window " + std::to_string(id),
                      "its windows are " + window_ids_text(file.window_ids()));
  }
  auto window = file.window(*index);
  if (!window) return window.error();
  return DiffSide{path, std::move(*window), file.process()};
}

// A file that does not load, named in the message (unless it names it already).
Error in_file(const std::string& path, Error error) {
  if (error.message.find(path) == std::string::npos) error.message = path + ": " + error.message;
  return error;
}

int run_trace_diff(const TraceDiffOptions& options) {
  auto file_a = SavedTrace::open(options.file_a);
  if (!file_a) return fail(options, in_file(options.file_a, file_a.error()));
  auto file_b = SavedTrace::open(options.file_b);
  if (!file_b) return fail(options, in_file(options.file_b, file_b.error()));
  auto warnings = check_same_build(options.file_a, file_a->process(), options.file_b, file_b->process(),
                                   options.allow_build_mismatch);
  if (!warnings) return fail(options, warnings.error());

  auto side_a = side_of(options.file_a, *file_a, options.window_given, options.window);
  if (!side_a) return fail(options, side_a.error());
  // --window-b, else the same --window id, else B's first window.
  const bool b_by_id = options.window_b_given || options.window_given;
  auto side_b = side_of(options.file_b, *file_b, b_by_id, options.window_b_given ? options.window_b : options.window);
  if (!side_b) return fail(options, side_b.error());

  auto diff = diff_windows(side_a->window, side_b->window, kMaxDifferingEvents, options.file_a, options.file_b);
  if (!diff) return fail(options, diff.error());
  DiffReport report{std::move(*side_a), std::move(*side_b), std::move(*diff), std::move(*warnings)};
  for (const DiffSide* side : {&report.a, &report.b}) {
    if (side->window.value("possible_loss", false)) {
      report.warnings.push_back(side->path + " window " + side->window.value("window_id", nlohmann::json()).dump() +
                                " may have lost events: its missing calls would show as differences");
    }
  }

  if (options.json) {
    Envelope envelope;
    envelope.operation = "trace_diff";
    envelope.data = diff_json(report);
    envelope.warnings = report.warnings;
    envelope.limits = {{"max_differing_events", kMaxDifferingEvents}};
    std::cout << json_text(envelope_json(envelope)) << std::endl;
  } else {
    print_diff(std::cout, report, {options.context, options.addresses});
    std::cout.flush();
  }
  return report.diff.equal() ? kEqual : kDifferent;
}

}  // namespace

CLI::App* setup_trace_diff(CLI::App& trace, int& exit_status) {
  auto options = std::make_shared<TraceDiffOptions>();
  CLI::App* command = trace.add_subcommand(
      "diff", "align the calls of two saved windows (xref trace --json or --jsonl output) and show what differs; "
              "exit status 0 equal, 1 different, 2 error; no process involved");
  command->add_option("A", options->file_a, "the first saved trace")->type_name("FILE")->required();
  command->add_option("B", options->file_b, "the second saved trace")->type_name("FILE")->required();
  CLI::Option* window = command
                            ->add_option("--window", options->window,
                                         "compare the window with this window_id (in both files unless --window-b); "
                                         "default: the first window of each")
                            ->transform(number_in(kWindowIds));
  CLI::Option* window_b =
      command->add_option("--window-b", options->window_b, "the window_id to compare in B (default: --window's)")
          ->transform(number_in(kWindowIds));
  command->add_flag("--json", options->json, "print one JSON document (operation trace_diff, docs/trace.md)");
  command->add_flag("--allow-build-mismatch", options->allow_build_mismatch,
                    "compare traces of different builds (or of unknown builds), whose static VAs may not match");
  command->add_flag("--addresses", options->addresses, "text: show each event's static VA after its name");
  command->add_option("--context", options->context,
                      "unchanged events shown around each difference; the others are collapsed")
      ->capture_default_str()
      ->transform(number_in({0, 1000000000}));
  command->callback([options, window, window_b, &exit_status] {
    options->window_given = window->count() > 0;
    options->window_b_given = window_b->count() > 0;
    exit_status = run_trace_diff(*options);
  });
  return command;
}

}  // namespace xref
