// A tracefs trace whose helper dies without cleaning up (SIGKILL, a crash
// of `xref trace` or of `xref serve`) leaves nothing: its watchdog removes
// the uprobe events and the instance, and the target's code reads back as
// its file. And the reaper at the next start judges leftovers by their
// owning process, PID and start time, never by the executable's name.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>

#include "serve_client.h"
#include "trace_harness.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

std::vector<std::string> tracefs_trace(pid_t target) {
  return {"trace", "--pid", std::to_string(target), "--start", "svc::handle_request", "--functions",
          "svc::validate,svc::settle", "--backend", "tracefs"};
}

class TracefsHelperDeath : public ::testing::TestWithParam<int> {};

TEST_P(TracefsHelperDeath, TraceKilledLeavesNoProbe) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-death-" + std::to_string(GetParam()));
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const pid_t helper = spawn_xref(tracefs_trace(target.pid()));
  ASSERT_GT(helper, 0);
  ASSERT_TRUE(await_tracing(helper)) << "the helper never started tracing";
  const pid_t watchdog = watchdog_of(helper);
  ASSERT_GT(watchdog, 0) << "no watchdog";
  const TracefsProbes probes = expect_probes_in(helper, target.pid(), XREF_TRACE_TARGET);

  kill(helper, GetParam());
  int status = 0;
  waitpid(helper, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), GetParam());
  expect_all_removed(helper, watchdog, target.pid(), probes);
}

INSTANTIATE_TEST_SUITE_P(Signals, TracefsHelperDeath, ::testing::Values(SIGKILL, SIGSEGV, SIGABRT),
                         [](const ::testing::TestParamInfo<int>& signal) {
                           return std::string(sigabbrev_np(signal.param));
                         });

// The same when `xref serve` dies with a tracefs session running.
TEST(TracefsServeDeath, ServeCrashLeavesNoProbe) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  TargetProcess target({XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", "2000"});
  ServeClient helper;
  ASSERT_EQ(helper.read()["type"], "hello");
  ASSERT_TRUE(helper.request("hello", {{"protocol", 1}}).contains("result"));
  const auto started = helper.request(
      "session.start", {{"argv", {"trace", "--start", "handle_request", "--functions", "validate,settle",
                                  "--backend", "tracefs"}},
                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  helper.await_event("window", started["result"]["session"]);
  const pid_t watchdog = watchdog_of(helper.pid());
  ASSERT_GT(watchdog, 0) << "no watchdog";
  const TracefsProbes probes = expect_probes_in(helper.pid(), target.pid(), XREF_SAMPLE_SERVICE);

  kill(helper.pid(), SIGSEGV);
  EXPECT_EQ(helper.wait(), -SIGSEGV);
  expect_all_removed(helper.pid(), watchdog, target.pid(), probes);
}

// A copy of xref under another name traces; the reaper of a second helper
// leaves its live instance and events alone, and it ends cleanly.
TEST(TracefsReaperCli, ALiveRenamedCopyIsLeftAlone) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const std::filesystem::path directory = "/tmp/xref-renamed-" + std::to_string(getpid());
  std::filesystem::create_directories(directory);
  const std::string renamed = (directory / "renamed-tracer").string();
  std::filesystem::copy_file(XREF_BINARY, renamed, std::filesystem::copy_options::overwrite_existing);
  const RecordFile first_record("tracefs-renamed");
  const RecordFile second_record("tracefs-renamed-second");
  TargetProcess first(target_command(first_record.path, {"--requests", "0"}));
  first_record.release();
  TargetProcess second(target_command(second_record.path, {}));

  const pid_t copy = spawn_xref(tracefs_trace(first.pid()), renamed);
  ASSERT_GT(copy, 0);
  ASSERT_TRUE(await_tracing(copy)) << "the renamed copy never started tracing";
  const std::string instance = instance_of(copy);

  auto args = tracefs_trace(second.pid());
  args.insert(args.end(), {"--max-windows", "1", "--duration-ms", "20000", "--json"});
  const XrefRun run = run_xref_attached(args, second_record.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto details = run.json()["summary"]["backend_details"];
  EXPECT_FALSE(details.contains("reap_failure")) << details.dump();
  EXPECT_EQ(instance_of(copy), instance) << "the live copy's instance was removed";
  EXPECT_TRUE(group_defined(copy)) << "the live copy's events were removed";

  kill(copy, SIGINT);
  int status = 0;
  waitpid(copy, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_FALSE(instance_exists(copy));
  EXPECT_FALSE(group_defined(copy));
  std::filesystem::remove_all(directory);
}

// Leftovers are judged by the process they name: a live PID with another
// start time is a reused PID (reaped), a live PID with its own start time
// is a live owner (kept), whatever either executable is called.
TEST(TracefsReaperCli, LeftoversAreJudgedByPidAndStartTime) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file("tracefs-owner");
  TargetProcess target(target_command(record_file.path, {}));
  std::ifstream stat("/proc/" + std::to_string(target.pid()) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int number = 3; number <= 22; ++number) fields >> field;
  const std::string pid = std::to_string(target.pid());
  const std::string live = pid + "_" + field, reused = pid + "_" + std::to_string(std::stoull(field) + 1);
  auto define = [&](const std::string& owner) {
    const std::string line = "p:xref_" + owner + "/p0 " + std::string(XREF_TRACE_TARGET) + ":0x0";
    command_output("echo '" + line + "' >> " + kTracefs + "/uprobe_events");
    std::string dash = owner;
    dash[dash.find('_')] = '-';
    command_output("mkdir " + kTracefs + "/instances/xref-" + dash);
  };
  define(live);
  define(reused);

  const XrefRun run = run_xref_attached(
      {"trace", "--pid", pid, "--start", "svc::handle_request", "--functions", "svc::settle", "--backend", "tracefs",
       "--max-windows", "1", "--duration-ms", "20000", "--json"},
      record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const std::string events = uprobe_events();
  const std::string instances = command_output("ls " + kTracefs + "/instances");
  EXPECT_EQ(events.find("xref_" + reused + "/"), std::string::npos) << events;
  EXPECT_EQ(instances.find("xref-" + pid + "-" + std::to_string(std::stoull(field) + 1)), std::string::npos);
  EXPECT_NE(events.find("xref_" + live + "/"), std::string::npos) << events;
  EXPECT_NE(instances.find("xref-" + pid + "-" + field), std::string::npos) << instances;
  command_output("rmdir " + kTracefs + "/instances/xref-" + pid + "-" + field);
  command_output("echo '-:xref_" + live + "/p0' >> " + kTracefs + "/uprobe_events");
}

}  // namespace
}  // namespace xref::test
