// A `profile` session of `xref serve` (docs/protocol.md, "profile in a
// debugger"): the capture samples while the process runs; the show a front
// end sends at a debugger's stop ends it there (the test stops the process
// with SIGSTOP, as a debugger's ptrace stop leaves it), and the hottest
// functions print named as the front end names their addresses (the test
// plays the debugger with names of its own). Shares against the CPU time
// profile_target measured itself; report over the session's capture;
// refusals; nothing left attached and no code changed.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../watch_leftovers.h"
#include "perf_events_held.h"
#include "profile_target_record.h"
#include "require.h"
#include "serve_client.h"
#include "target_process.h"

namespace xref::test {
namespace {

std::string profile_target(const std::string& build) { return std::string(XREF_TARGETS_DIR) + "/" + build; }

void hello(ServeClient& helper, bool names) {
  ASSERT_EQ(helper.read()["protocol"], 2);
  const auto answer = helper.request("hello", {{"protocol", 2}, {"client", "serve_profile_test"}, {"names", names}});
  ASSERT_EQ(answer["result"]["protocol"], 2) << answer.dump();
}

std::string text_of(const nlohmann::json& answer) {
  std::string text;
  const nlohmann::json& lines = answer.contains("result") ? answer["result"].value("text", nlohmann::json::array())
                                                          : answer["error"].value("text", nlohmann::json());
  if (lines.is_string()) return lines.get<std::string>() + "\n";
  for (const auto& line : lines) text += line.get<std::string>() + "\n";
  return text;
}

// The document of the session's end, from `show --json --all`.
nlohmann::json ended_document(ServeClient& helper, pid_t pid) {
  for (int attempt = 0; attempt < 3000; ++attempt) {
    const auto answer = run_words(helper, {"show", "--json", "--all"}, pid, {{"peek", true}});
    for (const auto& line : answer["result"].value("text", nlohmann::json::array())) {
      const auto parsed = nlohmann::json::parse(line.get<std::string>());
      if (parsed.contains("document")) return parsed["document"];
    }
    usleep(10000);
  }
  return nullptr;
}

// One worker thread on phase 1's split; the main thread only waits.
struct Worker {
  std::string dir;
  std::string record;
  std::unique_ptr<TargetProcess> process;

  explicit Worker(const std::string& build) {
    char pattern[] = "/tmp/xref-serve-profile-XXXXXX";
    dir = mkdtemp(pattern);
    record = dir + "/record";
    process = std::make_unique<TargetProcess>(
        std::vector<std::string>{profile_target(build), "--threads", "1", "--no-main-work", "--record", record});
  }
  ~Worker() {
    process.reset();
    unlink(record.c_str());
    rmdir(dir.c_str());
  }
  pid_t pid() const { return process->pid(); }
  // SIGTERM: the target stops, writes its record and exits.
  profile_target::Record finish() {
    kill(pid(), SIGCONT);
    kill(pid(), SIGTERM);
    process->wait_exit();
    return profile_target::read_record(record);
  }
};

TEST(ServeProfile, AStopEndsTheCaptureAndItsHottestFunctionsAreNamedByTheDebugger) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Worker target("profile_target");
  ServeClient helper;
  hello(helper, true);
  const auto started = run_words(helper, {"profile", "--freq", "499"}, target.pid());
  ASSERT_TRUE(started.contains("result")) << started.dump();
  EXPECT_NE(text_of(started).find("xref: session 1 profiling PID " + std::to_string(target.pid())), std::string::npos)
      << started.dump();
  EXPECT_EQ(started["result"]["session"]["command"], "profile");
  EXPECT_GT(perf_events_held_by(helper.pid()), 0u);
  // The sampler changes no byte of the code: a debugger's breakpoints go in as ever.
  EXPECT_EQ(code_bytes_changed(target.pid(), profile_target("profile_target")), 0u);
  sleep(2);
  kill(target.pid(), SIGSTOP);  // the debugger's stop

  // The stop's show: first the addresses for the debugger to name.
  nlohmann::json params = {{"at_stop", true}};
  auto answer = run_words(helper, {"show"}, target.pid(), params);
  ASSERT_TRUE(answer["result"].contains("names_needed")) << answer.dump();
  nlohmann::json names = nlohmann::json::array();
  std::map<std::string, std::string> debugger_name;
  int line = 100;
  for (const auto& live : answer["result"]["names_needed"][0]["addresses"]) {
    const std::string name = "dbg_fn_" + std::to_string(line);
    debugger_name[live.get<std::string>()] = name;
    names.push_back({{"address", live}, {"function", name}, {"offset", 4}, {"file", "/src/dbg.c"}, {"line", line++}});
  }
  ASSERT_EQ(helper.request("names", {{"pid", target.pid()}, {"names", names}})["result"], nlohmann::json::object());
  params["named"] = true;
  answer = run_words(helper, {"show"}, target.pid(), params);
  const std::string text = text_of(answer);
  EXPECT_NE(text.find("ended by until_stop"), std::string::npos) << text;
  EXPECT_NE(text.find("    Self  Samples    Total  Samples  Function  Module"), std::string::npos) << text;
  EXPECT_NE(text.find("dbg_fn_100 at dbg.c:100  profile_target"), std::string::npos) << text;
  EXPECT_NE(text.find("xref: session 1 ended (until_stop): "), std::string::npos) << text;
  EXPECT_EQ(answer["result"]["ended"][0]["stop_reason"], "until_stop") << answer.dump();
  EXPECT_EQ(perf_events_held_by(helper.pid()), 0u) << "the capture's events outlive it";

  // The same rows with the helper's names, against the record.
  const nlohmann::json document = ended_document(helper, target.pid());
  ASSERT_TRUE(document.is_object());
  const nlohmann::json rows = document["top"]["rows"];
  const pid_t pid = target.pid();
  const profile_target::Record record = target.finish();
  std::map<std::string, double> recorded;
  uint64_t cpu = 0;
  for (const auto& thread : record.threads) cpu += thread.cpu_ns[0];
  for (const auto& leaf : record.leaves) {
    if (leaf.phase == 1) recorded[leaf.name] += 100.0 * static_cast<double>(leaf.ns) / static_cast<double>(cpu);
  }
  std::string hottest;
  for (const auto& [name, share] : recorded) {
    if (hottest.empty() || share > recorded[hottest]) hottest = name;
  }
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["name"], hottest) << rows.dump();
  int compared = 0;
  for (const auto& [name, share] : recorded) {
    if (share < 5.0) continue;
    bool found = false;
    for (const auto& row : rows) {
      if (row["name"] != name) continue;
      found = true;
      const double reported = 100.0 * row["total_share"].get<double>();
      EXPECT_LE(std::fabs(reported - share), 3.0) << name << ": reported " << reported << "%, recorded " << share << "%";
      // The debugger's name of the row's address is the one shown.
      EXPECT_NE(text.find(debugger_name[row["live"].get<std::string>()] + " at dbg.c:"), std::string::npos) << name;
    }
    EXPECT_TRUE(found) << name << " is not among the hottest functions";
    ++compared;
  }
  EXPECT_GE(compared, 3);

  // report over the session's capture: the CLI's text.
  const nlohmann::json report = run_words(helper, {"profile", "report", "--top", "4"}, pid);
  ASSERT_TRUE(report.contains("result")) << report.dump();
  EXPECT_EQ(report["result"]["exit_status"], 0) << report.dump();
  const std::string report_text = text_of(report);
  EXPECT_NE(report_text.find("# "), std::string::npos) << report_text;
  EXPECT_NE(report_text.find(rows[0]["name"].get<std::string>()), std::string::npos) << report_text;
}

TEST(ServeProfile, ADurationEndsTheCaptureByItselfAndStopIsClean) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Worker target("profile_target_clang");
  ServeClient helper;
  hello(helper, false);
  const auto started = run_words(helper, {"profile", "--duration", "300ms", "--callers", "fp"}, target.pid());
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const nlohmann::json document = ended_document(helper, target.pid());
  ASSERT_TRUE(document.is_object());
  EXPECT_EQ(document["data"]["ended_by"], "duration");
  EXPECT_EQ(document["data"]["callers"], "fp");
  EXPECT_EQ(perf_events_held_by(helper.pid()), 0u);
  // A second one, ended by `xref stop`.
  ASSERT_TRUE(run_words(helper, {"profile"}, target.pid()).contains("result"));
  usleep(300000);
  const auto stopped = run_words(helper, {"stop"}, target.pid());
  EXPECT_NE(text_of(stopped).find("xref: session 2 ended (stopped): "), std::string::npos) << stopped.dump();
  EXPECT_NE(text_of(stopped).find("ended by stopped"), std::string::npos) << stopped.dump();
  // diff of the two captures, the last two of this helper.
  const auto diff = run_words(helper, {"profile", "diff"}, target.pid());
  EXPECT_EQ(diff["result"]["exit_status"], 0) << diff.dump();
  // The helper's exit while a capture runs: nothing of it stays.
  ASSERT_TRUE(run_words(helper, {"profile"}, target.pid()).contains("result"));
  helper.close_stdin();
  EXPECT_EQ(helper.wait(), 0);
  target.finish();
}

TEST(ServeProfile, BadWordsAreRefusedBeforeAnythingIsAttached) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Worker target("profile_target");
  ServeClient helper;
  hello(helper, false);
  const auto both = run_words(helper, {"profile", "--until-stop", "--duration", "1s"}, target.pid());
  ASSERT_TRUE(both.contains("error")) << both.dump();
  EXPECT_EQ(text_of(both), "xref: --duration excludes --until-stop; see `xref profile --help`\n") << both.dump();
  const auto lbr = run_words(helper, {"profile", "--callers", "lbr"}, target.pid());
  ASSERT_TRUE(lbr.contains("error")) << lbr.dump();
  const auto report = run_words(helper, {"profile", "report"}, target.pid());
  ASSERT_TRUE(report.contains("error")) << report.dump();
  EXPECT_EQ(text_of(report),
            "xref: no capture of this helper yet for `xref profile report` without a file; `xref profile` first (its "
            "capture ends at the next stop), or name a .xprof file\n");
  EXPECT_EQ(perf_events_held_by(helper.pid()), 0u);
  const auto help = run_words(helper, {"profile", "--help"}, target.pid());
  EXPECT_NE(text_of(help).find("--until-stop"), std::string::npos) << help.dump();
  const auto complete = helper.request("complete", {{"argv", {"profile"}}, {"partial", "re"}, {"context", {{"pid", target.pid()}}}});
  EXPECT_EQ(complete["result"]["candidates"], nlohmann::json::array({"report"})) << complete.dump();
  const auto options = helper.request("complete", {{"argv", {"profile"}}, {"partial", "--unt"}, {"context", {{"pid", target.pid()}}}});
  EXPECT_EQ(options["result"]["candidates"], nlohmann::json::array({"--until-stop"})) << options.dump();
  target.finish();
}

}  // namespace
}  // namespace xref::test
