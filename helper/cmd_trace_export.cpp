// xref trace export FILE --format chrome [-o OUT]: a saved trace (--json or
// --jsonl output) as a timeline for chrome://tracing or Perfetto; offline.
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "report.h"
#include "trace_export.h"
#include "trace_file.h"

namespace xref {
namespace {

struct TraceExportOptions {
  std::string file;
  std::string format = "chrome";
  std::string output;
};

int fail(const Error& error) {
  std::cerr << error_line(error) << std::endl;
  return error_exit_status(error.code);
}

// Writing the output while the input is read back window by window would
// destroy the trace being exported.
bool same_file(const std::string& input, const std::string& output) {
  struct stat in {}, out {};
  return stat(input.c_str(), &in) == 0 && stat(output.c_str(), &out) == 0 && in.st_dev == out.st_dev &&
         in.st_ino == out.st_ino;
}

int run_trace_export(const TraceExportOptions& options) {
  if (options.format != "chrome") {
    return fail(make_error(ErrorCode::invalid_argument, "--format must be chrome"));
  }
  auto file = SavedTrace::open(options.file);
  if (!file) return fail(file.error());
  if (options.output.empty() || options.output == "-") {
    auto written = write_chrome_trace(*file, std::cout);
    std::cout.flush();
    return written ? 0 : fail(written.error());
  }
  if (same_file(options.file, options.output)) {
    return fail(make_error(ErrorCode::invalid_argument, "-o " + options.output + " is the saved trace being exported",
                           "write the timeline to another file"));
  }
  std::ofstream out(options.output, std::ios::binary | std::ios::trunc);
  auto written = write_chrome_trace(*file, out);
  out.close();
  if (!written) return fail(written.error());
  if (!out) return fail(make_error(ErrorCode::file_error, "cannot write " + options.output));
  return 0;
}

}  // namespace

CLI::App* setup_trace_export(CLI::App& trace, int& exit_status) {
  auto options = std::make_shared<TraceExportOptions>();
  CLI::App* command = trace.add_subcommand(
      "export", "convert a saved trace (xref trace --json or --jsonl output) to a timeline; no process involved");
  command->add_option("file", options->file, "the saved trace")->required();
  command->add_option("--format", options->format, "chrome: Chrome trace-event JSON (chrome://tracing, Perfetto)")
      ->capture_default_str();
  command->add_option("--output,-o", options->output, "write here instead of stdout");
  command->callback([options, &exit_status] { exit_status = run_trace_export(*options); });
  return command;
}

}  // namespace xref
