// xref trace export FILE --format chrome [-o OUT]: a saved trace (--json or
// --jsonl output) as a timeline for chrome://tracing or Perfetto; offline.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <streambuf>
#include <string_view>

#include "command/option_values.h"
#include "input/user_files.h"
#include "output/report.h"
#include "trace/commands.h"
#include "trace/saved/export.h"
#include "trace/saved/file.h"
#include "trace/saved/show.h"

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

// An ostream's bytes, buffered, written to a descriptor it does not own;
// the first write error is kept (errno) and ends the writing.
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type byte) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(byte, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(byte);
      pbump(1);
    }
    return traits_type::not_eof(byte);
  }
  int sync() override {
    if (error_ != 0) return -1;
    if (!write_all(fd_, std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())))) {
      error_ = errno;
      return -1;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return 0;
  }

 private:
  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

// The output, opened with the user's rights (user_files.h) without
// truncating it, and compared with the input first: the input is read back
// window by window while the timeline is written, so `-o` naming the input
// itself (by a link, a symlink, another spelling) is refused while the
// input is still intact.
Result<UniqueFd> open_output(const TraceExportOptions& options, const SavedTrace& input) {
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
  if (FileIdentity{status.st_dev, status.st_ino} == input.identity()) {
    return make_error(ErrorCode::invalid_argument,
                      "-o " + options.output + " is the input " + options.file + " itself; writing would destroy it",
                      "give -o another file");
  }
  if (S_ISREG(status.st_mode) && ftruncate(out->get(), 0) != 0) return failed();
  return std::move(*out);
}

int run_trace_export(const TraceExportOptions& options) {
  if (options.format != "chrome") {
    return fail(make_error(ErrorCode::invalid_argument, "--format must be chrome"));
  }
  // Windows are checked as trace show checks them: the timeline reads
  // the same fields.
  auto file = SavedTrace::open(options.file, check_saved_window);
  if (!file) return fail(file.error());
  if (options.output.empty() || options.output == "-") {
    auto written = write_chrome_trace(*file, std::cout);
    std::cout.flush();
    return written ? 0 : fail(written.error());
  }
  auto out = open_output(options, *file);
  if (!out) return fail(out.error());
  DescriptorBuffer buffer(out->get());
  std::ostream stream(&buffer);
  auto written = write_chrome_trace(*file, stream);
  stream.flush();
  if (!written) return fail(written.error());
  if (const int error = buffer.error(); error != 0) {
    return fail(make_error(ErrorCode::file_error, "cannot write " + options.output + ": " + std::strerror(error)));
  }
  return 0;
}

}  // namespace

CLI::App* setup_trace_export(CLI::App& trace, int& exit_status) {
  auto options = std::make_shared<TraceExportOptions>();
  CLI::App* command = trace.add_subcommand(
      "export", "convert a saved trace (xref trace --json or --jsonl output) to a timeline; no process involved");
  command->add_option("file", options->file, "the saved trace")->type_name("FILE")->required();
  command->add_option("--format", options->format, "chrome: Chrome trace-event JSON (chrome://tracing, Perfetto)")
      ->capture_default_str()
      ->check(one_of({"chrome"}));
  command->add_option("--output,-o", options->output, "write here instead of stdout")->type_name("FILE");
  command->callback([options, &exit_status] { exit_status = run_trace_export(*options); });
  return command;
}

}  // namespace xref
