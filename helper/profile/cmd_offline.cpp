// xref profile report|annotate|diff: reports over .xprof captures, offline
// (no process involved). Each reads its captures bounded and checked
// (xprof/file.h), computes in xprof/, prints through render/.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string_view>

#include "command/option_values.h"
#include "input/input_file.h"
#include "input/user_files.h"
#include "output/report.h"
#include "profile/commands.h"
#include "render/profile_formats.h"
#include "render/profile_json.h"
#include "render/profile_text.h"
#include "xprof/annotate.h"
#include "xprof/block_report.h"
#include "xprof/caller_report.h"
#include "xprof/file.h"
#include "xprof/frames.h"
#include "xprof/function_report.h"
#include "xprof/line_report.h"
#include "xprof/profile_diff.h"

namespace xref {
namespace {

constexpr uint64_t kDefaultTop = 30;

struct ReportOptions {
  std::string file;
  std::string by = "function";
  uint64_t top = kDefaultTop;
  std::string within;
  std::string format;
  std::string output;
  std::string bin;
  bool json = false;
};

struct AnnotateCommandOptions {
  std::string file;
  std::string function;
  std::string percent = "capture";
  uint64_t min_samples = 0;
  bool source = false;
  std::string bin;
  bool json = false;
};

struct DiffCommandOptions {
  std::string before;
  std::string after;
  std::string other;
  std::string by = "function";
  std::string min_delta = "0";
  bool json = false;
};

void print_lines(std::ostream& out, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) out << line << "\n";
}

// The files of the capture's modules; --bin names the executable's.
ModuleFiles module_files(const Profile& profile, const std::string& bin) {
  std::map<uint32_t, std::string> paths;
  if (!bin.empty()) {
    if (auto executable = executable_module(profile)) paths[*executable] = bin;
  }
  return ModuleFiles(profile, std::move(paths));
}

// -o FILE, opened as the user without truncating it first, refused when it
// is the capture itself (the capture would be gone before it was read).
Result<void> write_output(const std::string& output, const std::string& input, const std::string& bytes) {
  const auto failed = [&output] {
    return make_error(ErrorCode::file_error, "cannot write " + output + ": " + std::strerror(errno));
  };
  auto out = open_user_file(output, O_WRONLY | O_CREAT);
  if (!out) {
    Error error = out.error();
    error.message = "cannot write " + error.message;
    return error;
  }
  struct stat written {};
  if (fstat(out->get(), &written) != 0) return failed();
  auto read = stat_user_file(input);
  if (read && *read && (*read)->st_dev == written.st_dev && (*read)->st_ino == written.st_ino) {
    return make_error(ErrorCode::invalid_argument, "-o " + output + " is the capture " + input + " itself",
                      "give -o another file");
  }
  if (S_ISREG(written.st_mode) && ftruncate(out->get(), 0) != 0) return failed();
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t count = write(out->get(), bytes.data() + done, bytes.size() - done);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return failed();
    done += static_cast<size_t>(count);
  }
  return {};
}

int run_format(const ReportOptions& options, const Profile& profile) {
  const auto fail = [](const Error& error) {
    std::cerr << error_line(error) << std::endl;
    return error_exit_status(error.code);
  };
  if (options.json) {
    return fail(make_error(ErrorCode::invalid_argument, "--format " + options.format + " and --json exclude each other",
                           "leave out --json: the format is the output"));
  }
  if (profile.total_samples() == 0) {
    return fail(make_error(ErrorCode::empty_capture, options.file + " holds no sample", "profile longer"));
  }
  if (options.format == "pprof" && options.output.empty() && isatty(STDOUT_FILENO)) {
    return fail(make_error(ErrorCode::invalid_argument, "--format pprof is gzipped bytes, not for a terminal",
                           "give -o FILE.pb.gz, or redirect standard output"));
  }
  Result<std::string> bytes = options.format == "folded" ? render::profile_folded(profile)
                              : options.format == "svg"  ? render::profile_svg(profile, options.file)
                                                         : render::profile_pprof(profile);
  if (!bytes) return fail(bytes.error());
  if (options.output.empty() || options.output == "-") {
    std::cout << *bytes;
    std::cout.flush();
    return 0;
  }
  if (auto written = write_output(options.output, options.file, *bytes); !written) return fail(written.error());
  return 0;
}

int run_report(const ReportOptions& options) {
  Envelope envelope;
  envelope.operation = "profile_report";
  auto profile = read_xprof(options.file);
  if (!profile) {
    envelope.error = profile.error();
    return report({options.json}, envelope, nullptr);
  }
  if (!options.format.empty()) return run_format(options, *profile);
  envelope.process = profile->process;
  auto selection = select_samples(*profile, options.within);
  if (!selection) {
    envelope.error = selection.error();
    return report({options.json}, envelope, nullptr);
  }
  ModuleFiles files = module_files(*profile, options.bin);
  const size_t top = static_cast<size_t>(options.top);
  nlohmann::json data = {{"file", options.file}, {"by", options.by}, {"top", options.top},
                         {"summary", render::profile_summary_json(*profile, *selection)}};
  std::vector<std::string> lines = render::profile_header_lines(*profile, *selection);
  std::vector<std::string> table;
  if (options.by == "function") {
    const auto rows = function_rows(*profile, *selection);
    render::function_report_json(data, *profile, rows, *selection, top);
    table = render::function_report_lines(rows, *selection, top);
  } else if (options.by == "caller") {
    const auto paths = caller_paths(*profile, *selection);
    render::caller_report_json(data, paths, *selection, top);
    table = render::caller_report_lines(paths, *selection, top);
  } else if (options.by == "line") {
    const LineReport lines_report = line_report(*profile, *selection, files);
    render::line_report_json(data, lines_report, *selection, top);
    table = render::line_report_lines(lines_report, *selection, top);
  } else {
    const BlockReport blocks = block_report(*profile, *selection, files);
    render::block_report_json(data, blocks, *selection, top);
    table = render::block_report_lines(blocks, *selection, top);
  }
  if (!profile->complete()) {
    envelope.warnings.push_back("the capture is not complete: see summary.incomplete_samples and summary.losses");
  }
  if (!options.within.empty()) {
    envelope.warnings.push_back("--within " + options.within + ": percentages are of the " +
                                std::to_string(selection->samples) + " samples whose stack passes through it");
  }
  envelope.data = std::move(data);
  envelope.limits = {{"top", options.top}};
  lines.insert(lines.end(), table.begin(), table.end());
  return report({options.json}, envelope, [&](std::ostream& out) { print_lines(out, lines); });
}

int run_annotate(const AnnotateCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "profile_annotate";
  auto profile = read_xprof(options.file);
  if (!profile) {
    envelope.error = profile.error();
    return report({options.json}, envelope, nullptr);
  }
  envelope.process = profile->process;
  ModuleFiles files = module_files(*profile, options.bin);
  const bool percent_function = options.percent == "function";
  auto annotation = annotate_function(*profile, options.function, files, {percent_function, options.min_samples, options.source});
  if (!annotation) {
    envelope.error = annotation.error();
    return report({options.json}, envelope, nullptr);
  }
  envelope.data = render::annotation_json(*annotation, percent_function);
  envelope.data["file"] = options.file;
  envelope.data["min_samples"] = options.min_samples;
  if (!profile->complete()) envelope.warnings.push_back("the capture is not complete (losses or stacks not whole)");
  return report({options.json}, envelope,
                [&](std::ostream& out) { print_lines(out, render::annotation_lines(*annotation, percent_function)); });
}

// "0.5%", "0.5", "2": points of share, from 0 to 100.
Result<double> parse_min_delta(std::string_view text) {
  std::string number(text);
  if (!number.empty() && number.back() == '%') number.pop_back();
  char* end = nullptr;
  errno = 0;
  const double value = number.empty() || !(std::isdigit(static_cast<unsigned char>(number[0])) != 0)
                           ? -1
                           : std::strtod(number.c_str(), &end);
  if (value < 0 || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(value) || value > 100) {
    return make_error(ErrorCode::invalid_argument, "--min-delta '" + std::string(text) + "' is not a share in points",
                      "give points of share from 0 to 100, e.g. 0.5% or 2");
  }
  return value;
}

int run_diff(const DiffCommandOptions& options) {
  Envelope envelope;
  envelope.operation = "profile_diff";
  const auto failed = [&](Error error) {
    envelope.error = std::move(error);
    return report({options.json}, envelope, nullptr);
  };
  auto min_delta = parse_min_delta(options.min_delta);
  if (!min_delta) return failed(min_delta.error());
  auto before = read_xprof(options.before);
  if (!before) return failed(before.error());
  auto after = read_xprof(options.after);
  if (!after) return failed(after.error());
  DiffOptions diff_options;
  diff_options.min_delta_points = *min_delta;
  if (!options.other.empty()) {
    auto other = open_user_elf(options.other);
    if (!other) return failed(other.error());
    diff_options.other_path = options.other;
    diff_options.other_build_id = other->build_id();
  }
  auto diff = diff_profiles(*before, *after, diff_options);
  if (!diff) return failed(diff.error());
  envelope.process = after->process;
  envelope.data = render::diff_json(*diff, options.before, options.after, *min_delta);
  for (const auto* profile : {&*before, &*after}) {
    if (!profile->complete()) {
      envelope.warnings.push_back(std::string(profile == &*before ? options.before : options.after) +
                                  " is not complete (losses or stacks not whole)");
    }
  }
  return report({options.json}, envelope, [&](std::ostream& out) {
    print_lines(out, render::diff_lines(*diff, options.before, options.after, *min_delta));
  });
}

void add_bin_option(CLI::App& command, std::string& bin) {
  command
      .add_option("--bin,-b", bin,
                  "the executable to read code and lines from instead of the path the capture recorded; its "
                  "build-id must be the capture's")
      ->type_name("FILE");
}

void setup_report(CLI::App& profile, int& exit_status) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = profile.add_subcommand(
      "report", "where a capture's samples fell: by function (self and total), caller path, source line or basic "
                "block; or the capture as folded stacks, a flame graph SVG or pprof");
  command->add_option("file", options->file, "the capture (.xprof)")->type_name("FILE")->required();
  command->add_option("--by", options->by,
                      "function: self and total samples; caller: call paths root to leaf; line: DWARF source "
                      "lines of the sampled instructions; block: their basic blocks")
      ->capture_default_str()
      ->check(one_of({"function", "caller", "line", "block"}));
  command->add_option("--top", options->top, "rows shown (0: all); the rest are counted")
      ->capture_default_str()
      ->transform(number_in({0, 1000000}));
  command->add_option("--within", options->within,
                      "only the samples whose stack passes through this function (a name or a 0xVA inside it); "
                      "shares are then of those samples")
      ->type_name("FN")
      ->check(not_empty("a function", "--within parse_request"));
  command->add_option("--format", options->format,
                      "folded: stacks for FlameGraph, inferno, speedscope; svg: a flame graph; pprof: gzipped "
                      "profile.proto (go tool pprof)")
      ->check(one_of({"folded", "svg", "pprof"}));
  command->add_option("--output,-o", options->output, "with --format: write here instead of stdout")->type_name("FILE");
  add_bin_option(*command, options->bin);
  command->add_flag("--json", options->json, "print one JSON document (operation profile_report)");
  command->callback([options, &exit_status] { exit_status = run_report(*options); });
}

void setup_annotate(CLI::App& profile, int& exit_status) {
  auto options = std::make_shared<AnnotateCommandOptions>();
  CLI::App* command = profile.add_subcommand(
      "annotate", "one function's instructions with the samples taken at each, their share and source line; the "
                  "hottest marked");
  command->add_option("file", options->file, "the capture (.xprof)")->type_name("FILE")->required();
  command->add_option("function", options->function, "the function: its name, or a 0xVA (static) inside it")
      ->type_name("FN|0xVA")
      ->required()
      ->check(not_empty("a function", "busy_loop"));
  command->add_option("--percent", options->percent,
                      "capture: shares of all the capture's samples; function: of the function's own")
      ->capture_default_str()
      ->check(one_of({"capture", "function"}));
  command->add_option("--min-samples", options->min_samples,
                      "show only instructions with at least this many samples (the others are counted)")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX}));
  command->add_flag("--source,--c", options->source,
                    "the source text of each line above its first instruction, read from the file DWARF names "
                    "(as objdump -S)");
  add_bin_option(*command, options->bin);
  command->add_flag("--json", options->json, "print one JSON document (operation profile_annotate)");
  command->callback([options, &exit_status] { exit_status = run_annotate(*options); });
}

void setup_diff(CLI::App& profile, int& exit_status) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* command = profile.add_subcommand(
      "diff", "each function's share of two captures and the change in points, largest change first; functions "
              "matched by build-id and address, or by name across builds with --other");
  command->add_option("before", options->before, "the first capture (.xprof)")->type_name("FILE")->required();
  command->add_option("after", options->after, "the second capture (.xprof)")->type_name("FILE")->required();
  command->add_option("--other", options->other,
                      "the second capture's executable, when it is another build than the first's: functions are "
                      "then matched by name")
      ->type_name("BIN");
  command->add_option("--by", options->by, "function: self share of each function")
      ->capture_default_str()
      ->check(one_of({"function"}));
  command->add_option("--min-delta", options->min_delta,
                      "leave out functions whose share changed by fewer points (0.5% or 0.5); they are counted")
      ->capture_default_str();
  command->add_flag("--json", options->json, "print one JSON document (operation profile_diff)");
  command->callback([options, &exit_status] { exit_status = run_diff(*options); });
}

}  // namespace

void setup_profile_offline(CLI::App& profile, int& exit_status) {
  setup_report(profile, exit_status);
  setup_annotate(profile, exit_status);
  setup_diff(profile, exit_status);
}

}  // namespace xref
