// What a person reads after a mistake on the command line, exactly: the
// seed's --duration with a unit (and without one), an unknown option
// answered with the nearest option of the command typed, and the help of
// that command, not of xref as a whole. Each refusal is one line with exit
// status 2, the same error object under --json, and nothing attached.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "require.h"
#include "run_xref.h"
#include "sample_target.h"

namespace xref::test {
namespace {

// `args` refused with exactly `line` on stderr (without "xref: error: "),
// and under --json with the same message and hint.
void expect_refusal(std::vector<std::string> args, const std::string& message, const std::string& hint) {
  const XrefRun text = run_xref(args);
  std::string command;
  for (const auto& arg : args) command += " " + arg;
  EXPECT_EQ(text.exit_status, 2) << command << "\n" << text.err;
  EXPECT_EQ(text.err, "xref: error: " + message + "; " + hint + "\n") << command;
  EXPECT_EQ(text.out, "") << command;
  args.push_back("--json");
  const XrefRun json = run_xref(args);
  EXPECT_EQ(json.exit_status, 2) << command << " --json\n" << json.err;
  const auto document = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(document.is_object()) << command << " --json\n" << json.out;
  EXPECT_EQ(document["error"]["code"], "invalid_argument") << json.out;
  EXPECT_EQ(document["error"]["message"], message) << json.out;
  EXPECT_EQ(document["error"]["hint"], hint) << json.out;
}

TEST(MessagesCli, DurationWithoutAUnitNamesBothSpellings) {
  SampleTarget target;
  const std::string hint = "give a whole number and a unit: 5s, 5ms or 5m (or --duration-ms N, in milliseconds)";
  expect_refusal({"trace", "--pid", target.pid(), "--start", "handle_request", "--duration", "5"},
                 "--duration: '5' has no unit", hint);
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--duration", "5"}, "--duration: '5' has no unit", hint);
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--duration", "5y"},
                 "--duration: '5y' has no unit xref knows (ms, s, m, h)",
                 "give a whole number and a unit: 5s, 5ms or 5m (or --duration-ms N, in milliseconds)");
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--duration", "1.5s"},
                 "--duration: '1.5s' is not a whole number of a unit", "give a smaller unit: 1500ms for 1.5s");
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--duration", "8761h"},
                 "--duration: '8761h' is out of range", "give from 0 (no limit) up to a year (8760h)");
  const XrefRun both = run_xref({"probe", "--pid", target.pid(), "validate", "--duration", "1s", "--duration-ms", "5"});
  EXPECT_EQ(both.exit_status, 2) << both.err;
  EXPECT_EQ(both.err, "xref: error: --duration-ms excludes --duration; see `xref probe --help`\n");
}

// The bound is the one --duration-ms sets: the run says so in its limits
// and stops on it.
TEST(MessagesCli, DurationWithAUnitIsDurationMs) {
  XREF_REQUIRE(geteuid() == 0, "root for BPF");
  SampleTarget target;
  const XrefRun probe = run_xref({"probe", "--pid", target.pid(), "validate", "--duration", "300ms", "--json"});
  ASSERT_EQ(probe.exit_status, 0) << probe.err;
  EXPECT_EQ(probe.json()["limits"]["duration_ms"], 300) << probe.out;
  EXPECT_EQ(probe.json()["summary"]["stop_reason"], "duration") << probe.out;
  const XrefRun trace =
      run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--duration", "1s", "--json"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  const auto summary = trace.json()["summary"];
  EXPECT_EQ(summary["stop_reason"], "duration") << trace.out;
  EXPECT_GE(summary["elapsed_ms"].get<uint64_t>(), 1000u) << trace.out;
}

TEST(MessagesCli, AnUnknownOptionGetsTheNearestOptionOfItsCommand) {
  SampleTarget target;
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--durration-ms", "5"},
                 "`xref probe` has no option --durration-ms", "did you mean --duration-ms? see `xref probe --help`");
  expect_refusal({"probe", "--pid", target.pid(), "validate", "--heartbeat", "5"},
                 "`xref probe` has no option --heartbeat", "did you mean --heartbeat-ms? see `xref probe --help`");
  expect_refusal({"trace", "--pid", target.pid(), "--start", "handle_request", "--max-window=3"},
                 "`xref trace` has no option --max-window", "did you mean --max-windows? see `xref trace --help`");
  expect_refusal({"trace", "--pid", target.pid(), "--start", "handle_request", "--calees-of", "handle_request"},
                 "`xref trace` has no option --calees-of", "did you mean --callees-of? see `xref trace --help`");
  // Nothing near: the command's help alone.
  expect_refusal({"maps", "--pid", target.pid(), "--colour"}, "`xref maps` has no option --colour",
                 "see `xref maps --help`");
}

TEST(MessagesCli, TheHintNamesTheCommandTyped) {
  char path[] = "/tmp/xref-messages-XXXXXX";
  close(mkstemp(path));
  expect_refusal({"trace", "show", path, "--windw", "3"}, "`xref trace show` has no option --windw",
                 "did you mean --window? see `xref trace show --help`");
  const XrefRun missing = run_xref({"probe", "--pid", "1"});
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_EQ(missing.err, "xref: error: address is required; see `xref probe --help`\n");
  const XrefRun extra = run_xref({"trace", "show", path, "again"});
  EXPECT_EQ(extra.exit_status, 2);
  EXPECT_EQ(extra.err, "xref: error: `xref trace show` takes no argument 'again' here; see `xref trace show --help`\n");
  unlink(path);
}

}  // namespace
}  // namespace xref::test
