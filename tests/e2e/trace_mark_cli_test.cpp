// xref trace --mark-file/--mark-regex against the live sample service, which
// logs "request ID asset A amount M" just before handling each request and
// rotates its log: each window must carry its own request's line, the
// request id the window fetched itself, even when requests come every half
// millisecond (far faster than the log is polled: the write clock places
// each line exactly).
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

}  // namespace
}  // namespace xref::test
