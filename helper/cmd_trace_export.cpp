// xref trace export FILE --format chrome [-o OUT]: a saved trace (--json or
// --jsonl output) as a timeline for chrome://tracing or Perfetto; offline.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <string_view>

#include "commands.h"
#include "report.h"
#include "trace_export.h"
#include "trace_file.h"
#include "user_files.h"

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

// False with errno set when `text` could not all be written.
bool write_all(int fd, std::string_view text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t count = write(fd, text.data() + done, text.size() - done);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return false;
    done += static_cast<size_t>(count);
  }
  return true;
}

// The output is opened without truncating it and compared with the input
// first: `-o` naming the input itself (by a link, a symlink, another
// spelling) is refused while the input is still intact.
Result<void> write_output(const TraceExportOptions& options, const FileIdentity& input, const std::string& text) {
  const auto failed = [&options] {
    return make_error(ErrorCode::file_error, "cannot write " + options.output + ": " + std::strerror(errno));
  };
  auto out = open_user_file(options.output, O_WRONLY | O_CREAT);
  if (!out) {
    Error error = out.error();
    error.message = "cannot write " + error.message;
    return error;
  }
  struct stat status {};
  if (fstat(out->get(), &status) != 0) return failed();
  if (FileIdentity{status.st_dev, status.st_ino} == input) {
    return make_error(ErrorCode::invalid_argument,
                      "-o " + options.output + " is the input " + options.file + " itself; writing would destroy it",
                      "give -o another file");
  }
  if (S_ISREG(status.st_mode) && ftruncate(out->get(), 0) != 0) return failed();
  if (!write_all(out->get(), text) || !write_all(out->get(), "\n")) return failed();
  return {};
}

int run_trace_export(const TraceExportOptions& options) {
  if (options.format != "chrome") {
    return fail(make_error(ErrorCode::invalid_argument, "--format must be chrome"));
  }
  FileIdentity input;
  auto file = load_trace_file(options.file, &input);
  if (!file) return fail(file.error());
  const std::string text = chrome_trace(*file).dump();
  if (options.output.empty() || options.output == "-") {
    std::cout << text << std::endl;
    return 0;
  }
  if (auto written = write_output(options, input, text); !written) return fail(written.error());
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
