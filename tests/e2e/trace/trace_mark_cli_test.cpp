// xref trace --mark-file/--mark-regex against the live sample service, which
// logs "request ID asset A amount M" just before handling each request and
// rotates its log: each window must carry its own request's line, the
// request id the window fetched itself, even when requests come every half
// millisecond (far faster than the log is polled: the write clock places
// each line exactly).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "sample_target.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

struct LoggingService {
  LoggingService(const std::string& test, const std::string& interval_us, const std::string& rotate_every)
      : log("/tmp/xref-mark-" + test + "-" + std::to_string(getpid()) + ".log"),
        // One worker, so the latest request line is the one of the request
        // being handled.
        process({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", interval_us, "--log", log,
                 "--rotate-log-every", rotate_every}) {}
  ~LoggingService() {
    std::filesystem::remove(log);
    std::filesystem::remove(log + ".1");
  }
  std::string pid() const { return std::to_string(process.pid()); }

  const std::string log;
  TargetProcess process;
};

// The line sample_service writes for request `id` of worker 0.
std::string request_line(uint64_t id) {
  return "request " + std::to_string(id) + " asset " + std::to_string(1 + id % 4) + " amount " +
         std::to_string(100 * (1 + id % 5));
}

std::vector<std::string> trace_args(const LoggingService& service, const std::string& windows) {
  return {"trace", "--pid", service.pid(), "--start", "handle_request", "--fetch", "id=+0(%di):u64", "--functions",
          "validate", "--max-windows", windows, "--duration-ms", "60000", "--mark-file", service.log,
          "--mark-regex", "^request ([0-9]+) "};
}

TEST(TraceMarkCli, EachWindowIsStampedWithItsRequestsLogLineAcrossRotations) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  LoggingService service("json", "500", "20");
  auto args = trace_args(service, "100");
  args.push_back("--json");
  const XrefRun trace = run_xref(args);
  ASSERT_EQ(trace.exit_status, 0) << trace.err << trace.out;
  const auto document = trace.json();
  EXPECT_EQ(document["summary"]["mark_file"]["clock"], "write_clock") << document["summary"].dump();
  const auto windows = document["windows"];
  ASSERT_EQ(windows.size(), 100u);
  std::vector<uint64_t> ids;
  for (const auto& window : windows) {
    const uint64_t id = std::stoull(window["start_fetches"][0]["value"].get<std::string>(), nullptr, 16);
    ids.push_back(id);
    EXPECT_EQ(window["mark_status"], "matched") << window.dump();
    EXPECT_EQ(window["mark"], request_line(id)) << window.dump();
    EXPECT_EQ(window["mark_match"], std::to_string(id));
    EXPECT_EQ(window["mark_certain"], true) << "the write clock timed the line: " << window.dump();
  }
  // A hundred requests in a row, so the log was rotated (every 20 lines)
  // four times or more while they were traced.
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], ids[i - 1] + 1) << "window " << i;
  EXPECT_TRUE(std::filesystem::exists(service.log + ".1"));
}

TEST(TraceMarkCli, TheWindowLineShowsTheMark) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  LoggingService service("text", "20000", "2");
  const XrefRun trace = run_xref(trace_args(service, "3"));
  ASSERT_EQ(trace.exit_status, 0) << trace.err << trace.out;
  const std::regex window_line(R"re(^window \d+ .* id=0x([0-9a-f]+)  mark "(\d+)"\??$)re");
  int windows = 0;
  std::istringstream lines(trace.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("window ", 0) != 0) continue;
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, window_line)) << line;
    EXPECT_EQ(std::stoull(match[2].str()), std::stoull(match[1].str(), nullptr, 16)) << line;
    ++windows;
  }
  EXPECT_EQ(windows, 3) << trace.out;
}

TEST(TraceMarkCli, NoMatchingLineYetIsSaid) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  LoggingService service("nomatch", "20000", "0");
  auto args = trace_args(service, "1");
  args.back() = "^never this";
  args.push_back("--json");
  const XrefRun trace = run_xref(args);
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  const auto window = trace.json()["windows"][0];
  EXPECT_EQ(window["mark_status"], "no_match_yet");
  EXPECT_TRUE(window["mark"].is_null());
}

// A log holds whatever bytes its writer wrote. A matching line that is not
// UTF-8 is shown with U+FFFD in its place, in text and JSON alike; it used
// to make every output mode throw from nlohmann::json::dump and abort.
TEST(TraceMarkCli, ALogLineThatIsNotUtf8IsShownNotFatal) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const std::string log = "/tmp/xref-mark-bytes-" + std::to_string(getpid()) + ".log";
  std::ofstream(log) << "request \xff\xfe 7\n";
  auto trace = [&](const std::string& mode) {
    std::vector<std::string> args = {"trace", "--pid", target.pid(), "--start", "handle_request", "--max-windows",
                                     "1", "--duration-ms", "60000", "--mark-file", log, "--mark-regex",
                                     "^request (.*)"};
    if (!mode.empty()) args.push_back(mode);
    return run_xref(args);
  };
  const std::string replaced = "\xef\xbf\xbd\xef\xbf\xbd 7";  // U+FFFD twice, then " 7"
  const XrefRun text = trace("");
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("mark \"" + replaced + "\""), std::string::npos) << text.out;
  const XrefRun json = trace("--json");
  ASSERT_EQ(json.exit_status, 0) << json.err;
  EXPECT_EQ(json.json()["windows"][0]["mark_match"], replaced) << json.out;
  const XrefRun jsonl = trace("--jsonl");
  ASSERT_EQ(jsonl.exit_status, 0) << jsonl.err;
  std::istringstream lines(jsonl.out);
  std::string header, window;
  std::getline(lines, header);
  std::getline(lines, window);
  EXPECT_EQ(nlohmann::json::parse(window)["window"]["mark_match"], replaced) << jsonl.out;
  std::filesystem::remove(log);
}

TEST(TraceMarkCli, BadMarkOptionsAreRefusedBeforeAnythingIsAttached) {
  SampleTarget target;
  const std::string log = "/tmp/xref-mark-bad-" + std::to_string(getpid()) + ".log";
  std::ofstream(log) << "request 1\n";
  const std::vector<std::string> base = {"trace", "--pid", target.pid(), "--start", "handle_request",
                                         "--functions", "validate"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_xref(args);
  };
  const XrefRun bad_regex = with({"--mark-file", log, "--mark-regex", "request ([0-9]+"});
  EXPECT_EQ(bad_regex.exit_status, 2);
  EXPECT_NE(bad_regex.err.find("does not compile"), std::string::npos) << bad_regex.err;
  const XrefRun missing = with({"--mark-file", log + ".absent", "--mark-regex", "request"});
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_NE(missing.err.find("cannot read --mark-file"), std::string::npos) << missing.err;
  const XrefRun alone = with({"--mark-file", log});
  EXPECT_EQ(alone.exit_status, 2);
  EXPECT_NE(alone.err.find("go together"), std::string::npos) << alone.err;
  const XrefRun json = with({"--mark-file", log + ".absent", "--mark-regex", "request", "--json"});
  EXPECT_EQ(json.exit_status, 2);
  EXPECT_EQ(json.json()["error"]["code"], "invalid_argument") << json.out;
  std::filesystem::remove(log);
}

// A backreference needs backtracking, which can take exponential time (a
// line of a's against ^(a*)*\1b$ hung with 8 GB): refused up front, with
// its own status, before the write clock or any probe is attached.
TEST(TraceMarkCli, ABackreferenceIsRefusedBeforeAnythingIsAttached) {
  SampleTarget target;
  const std::string log = "/tmp/xref-mark-backref-" + std::to_string(getpid()) + ".log";
  std::ofstream(log) << std::string(100000, 'a') << "\n";
  const std::vector<std::string> args = {"trace", "--pid", target.pid(), "--start", "handle_request", "--functions",
                                         "validate", "--mark-file", log, "--mark-regex", "^(a*)*\\1b$"};
  const XrefRun text = run_xref(args);
  EXPECT_EQ(text.exit_status, 16) << text.err;
  EXPECT_NE(text.err.find("has a backreference (\\1), which xref does not support"), std::string::npos) << text.err;
  EXPECT_EQ(text.err.find('\n'), text.err.size() - 1) << "one line: " << text.err;
  EXPECT_EQ(text.err.find("xref: tracing"), std::string::npos) << "nothing is attached: " << text.err;
  auto json_args = args;
  json_args.push_back("--json");
  const XrefRun json = run_xref(json_args);
  EXPECT_EQ(json.exit_status, 16);
  EXPECT_EQ(json.json()["error"]["code"], "unsupported_regex");
  EXPECT_EQ(json.json()["error"]["exit_status"], 16);
  std::filesystem::remove(log);
}

// A pattern that makes a backtracking matcher take exponential time, on
// lines made for it: the trace runs, and the marks are what POSIX says.
TEST(TraceMarkCli, APathologicalPatternStillStampsWindows) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const std::string log = "/tmp/xref-mark-nested-" + std::to_string(getpid()) + ".log";
  const std::string matching(1000, 'a');
  std::ofstream(log) << matching << "\n" << std::string(60000, 'a') << "b\n";
  const XrefRun trace = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--functions",
                                  "validate", "--max-windows", "1", "--duration-ms", "60000", "--mark-file", log,
                                  "--mark-regex", "^(a+)+$", "--json"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  const auto window = trace.json()["windows"][0];
  EXPECT_EQ(window["mark_status"], "matched") << window.dump();
  EXPECT_EQ(window["mark"], matching) << "the line of a's and a b does not match";
  EXPECT_EQ(window["mark_match"], matching);
  std::filesystem::remove(log);
}

// open() of a FIFO without a writer waits forever; --mark-file on one is
// refused at once, as any file that is not regular.
TEST(TraceMarkCli, AFifoMarkFileIsRefused) {
  SampleTarget target;
  const std::string fifo = "/tmp/xref-mark-fifo-" + std::to_string(getpid());
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string out = fifo + ".out";
  // In the background, so that a regression fails the test instead of hanging it.
  const std::string command = shell_quote(XREF_BINARY) + " trace --pid " + target.pid() +
                              " --start handle_request --functions validate --mark-file " + shell_quote(fifo) +
                              " --mark-regex x > " + shell_quote(out) + " 2>&1; echo \"exit=$?\" >> " + shell_quote(out);
  const pid_t runner = fork();
  if (runner == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  bool finished = false;
  for (int poll = 0; poll < 3000 && !finished; ++poll) {  // a cap of a minute for a hung run
    finished = waitpid(runner, &status, WNOHANG) == runner;
    if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!finished) {
    kill(runner, SIGKILL);
    waitpid(runner, nullptr, 0);
    if (int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK); writer >= 0) close(writer);  // unblocks a stuck xref
  }
  std::ifstream result(out);
  const std::string text((std::istreambuf_iterator<char>(result)), {});
  EXPECT_TRUE(finished) << "xref blocked on the FIFO";
  EXPECT_NE(text.find("--mark-file " + fifo + " is not a regular file (it is a FIFO)"), std::string::npos) << text;
  EXPECT_NE(text.find("exit=2"), std::string::npos) << text;
  unlink(fifo.c_str());
  unlink(out.c_str());
}

}  // namespace
}  // namespace xref::test
