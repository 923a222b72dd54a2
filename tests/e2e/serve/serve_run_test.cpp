// Protocol 2 (docs/protocol.md, "Protocol 2: the helper renders"): a
// front end's words in, the text to print out, with the debugger's names,
// against the sample service's own record and addresses. Real uprobes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sample_target.h"
#include "serve_client.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

const char* const kFunctions = "validate,price_order,apply_fee,route_even,route_odd,settle";

// A record file of the sample service's, removed at the end.
struct TempFile {
  explicit TempFile(const std::string& name)
      : path_("/tmp/xref-" + name + "-" + std::to_string(getpid()) + ".txt") {}
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(value));
  return text;
}

// The functions request `window` handled called, as the service recorded them.
std::vector<std::string> recorded_calls_of(const std::string& record, uint32_t tid, const nlohmann::json& window) {
  const uint64_t request = std::stoull(window["start_fetches"][0]["value"].get<std::string>(), nullptr, 0);
  for (int attempt = 0; attempt < 500; ++attempt) {
    const auto requests = read_sample_record(record);
    if (auto found = requests.find({tid, request}); found != requests.end()) return call_names(found->second);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

std::vector<std::string> service_argv(const std::string& record) {
  return {XREF_SAMPLE_SERVICE, "--threads", "1", "--requests", "0", "--interval-us", "2000", "--record", record};
}

// A protocol 2 front end that names addresses.
void hello(ServeClient& helper) {
  ASSERT_EQ(helper.read()["protocol"], 2);
  const auto answer = helper.request("hello", {{"protocol", 2}, {"client", "serve_run_test"}, {"names", true}});
  ASSERT_EQ(answer["result"]["protocol"], 2) << answer.dump();
}

nlohmann::json run(ServeClient& helper, const std::vector<std::string>& words, pid_t pid,
                   nlohmann::json extra = nlohmann::json::object()) {
  return run_words(helper, words, pid, std::move(extra));
}

std::string text_of(const nlohmann::json& answer) {
  std::string text;
  for (const auto& line : answer["result"].value("text", nlohmann::json::array())) text += line.get<std::string>() + "\n";
  return text;
}

uint64_t live(const nlohmann::json& value) { return std::stoull(value.get<std::string>(), nullptr, 0); }

// The debugger's names: "DBG_" + what the sample service says each function is.
nlohmann::json debugger_names(const TargetProcess& target, const nlohmann::json& needed) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& address : needed["addresses"]) {
    const uint64_t at = live(address);
    nlohmann::json name = {{"address", address}, {"unknown", true}};
    for (const auto& [key, start] : target.values()) {
      if (key.rfind("func ", 0) != 0 || start > at) continue;
      const uint64_t offset = at - start;
      if (offset < 0x200 && (!name.contains("offset") || offset < name["offset"].get<uint64_t>())) {
        name = {{"address", address}, {"function", "DBG_" + key.substr(5)}, {"offset", offset},
                {"file", "/src/sample_service.c"}, {"line", 7}};
      }
    }
    names.push_back(name);
  }
  return names;
}

// A sample service recording its requests, and a protocol 2 helper beside it.
struct Scene {
  explicit Scene(const std::string& name) : record(name), target(service_argv(record.path())) { hello(helper); }
  TempFile record;
  TargetProcess target;
  ServeClient helper;
};

// `run show` as a front end does it at a stop: names first, then the text.
nlohmann::json show_at_stop(ServeClient& helper, const TargetProcess& target, int* rounds = nullptr) {
  for (int round = 1;; ++round) {
    auto answer = run(helper, {"show"}, target.pid(), {{"at_stop", true}});
    EXPECT_TRUE(answer.contains("result")) << answer.dump();
    if (!answer["result"].contains("names_needed")) {
      if (rounds) *rounds = round;
      return answer;
    }
    for (const auto& needed : answer["result"]["names_needed"]) {
      EXPECT_EQ(needed["pid"], target.pid());
      const auto named = helper.request("names", {{"pid", target.pid()}, {"names", debugger_names(target, needed)}});
      EXPECT_TRUE(named.contains("result")) << named.dump();
    }
    if (round > 3) return answer;
  }
}

TEST(ServeRun, TraceWindowTextUsesTheDebuggersNamesInTheRecordsOrder) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Scene scene("serve-run-record");
  TargetProcess& target = scene.target;
  ServeClient& helper = scene.helper;
  const auto started =
      run(helper, {"trace", "--start", "handle_request", "--fetch", "id=+0(%di):u64", "--functions", kFunctions,
                   "--max-windows", "1"},
          target.pid());
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const auto& session = started["result"]["session"];
  EXPECT_EQ(session["id"], 1);
  EXPECT_EQ(session["command"], "trace");
  EXPECT_FALSE(session["probe_sites"].empty());
  EXPECT_NE(text_of(started).find("xref: session 1 tracing PID " + std::to_string(target.pid())), std::string::npos)
      << text_of(started);

  // The window closes; no event reaches the front end in protocol 2.
  nlohmann::json window;
  for (;;) {
    const auto kept = run(helper, {"show", "--all", "--json"}, target.pid(), {{"peek", true}});
    const auto& lines = kept["result"]["text"];
    if (!lines.empty()) {
      window = nlohmann::json::parse(lines[0].get<std::string>())["window"];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(helper.queued([](const nlohmann::json& message) { return message.value("type", "") == "event"; }));

  int rounds = 0;
  const auto shown = show_at_stop(helper, target, &rounds);
  EXPECT_EQ(rounds, 2) << "the first show asks for names, the second prints";
  const std::string text = text_of(shown);
  // Every function the request called, by the debugger's name, in the record's order.
  const auto calls = recorded_calls_of(scene.record.path(), window["tid"].get<uint32_t>(), window);
  ASSERT_FALSE(calls.empty());
  size_t at = 0;
  for (const std::string& function : calls) {
    at = text.find("> DBG_" + function, at);
    ASSERT_NE(at, std::string::npos) << "no entry of DBG_" << function << " in order in\n" << text;
  }
  EXPECT_NE(text.find("sample_service.c:7"), std::string::npos) << text;
  EXPECT_NE(text.find("xref: session 1 ended (max_windows)"), std::string::npos) << text;
  EXPECT_EQ(shown["result"]["ended"], nlohmann::json::array({{{"session", 1}, {"stop_reason", "max_windows"}}}));

  // Shown once: the next stop has nothing new.
  EXPECT_EQ(text_of(show_at_stop(helper, target)), "");

  // `break 1:1`: the call site of the window's second event.
  const auto& second = window["events"][1];
  const auto broke = run(helper, {"break", "1:1"}, target.pid());
  ASSERT_TRUE(broke.contains("result")) << broke.dump();
  EXPECT_EQ(live(broke["result"]["set_breakpoint"]["address"]), live(second["call_site_live"]));
  const std::string after = broke["result"]["text_after"][0];
  EXPECT_NE(after.find("Breakpoint {number}: "), std::string::npos) << after;
  EXPECT_NE(after.find("DBG_handle_request+0x"), std::string::npos) << after;
}

TEST(ServeRun, FailedStartKeepsNumbersPrepareAndStop) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Scene scene("serve-run-prepare");
  TargetProcess& target = scene.target;
  ServeClient& helper = scene.helper;
  // A misspelt function: one line to print, and no session number used up.
  const auto failed = run(helper, {"probe", "no_such_function_here"}, target.pid());
  ASSERT_TRUE(failed.contains("error")) << failed.dump();
  EXPECT_EQ(failed["error"]["text"].get<std::string>().rfind("xref: ", 0), 0u) << failed.dump();

  // bp:1 on validate: the helper asks the debugger to turn breakpoint 1 off first.
  const uint64_t validate = target.value("func", "validate");
  const nlohmann::json breakpoint = {{"id", 1}, {"enabled", true},
                                     {"locations", {{{"id", "1.1"}, {"address", hex(validate)}, {"enabled", true}}}}};
  nlohmann::json context = {{"pid", target.pid()}, {"breakpoints", {breakpoint}}};
  auto answer = helper.request("run", {{"argv", {"probe", "bp:1"}}, {"context", context}});
  ASSERT_EQ(answer["result"]["prepare"]["disable_breakpoints"], nlohmann::json::array({1})) << answer.dump();
  context["breakpoints"][0]["enabled"] = false;
  answer = helper.request("run", {{"argv", {"probe", "bp:1"}}, {"context", context}, {"prepared", {{"disabled", {1}}}}});
  ASSERT_TRUE(answer.contains("result")) << answer.dump();
  EXPECT_EQ(answer["result"]["session"]["id"], 1) << "the failed start used a number up";
  EXPECT_EQ(answer["result"]["session"]["breakpoints_to_disable"], nlohmann::json::array({1}));
  EXPECT_NE(text_of(answer).find("xref: breakpoint 1 disabled while the probe is armed"), std::string::npos)
      << text_of(answer);

  const auto listed = run(helper, {"sessions"}, target.pid());
  EXPECT_NE(text_of(listed).find("probe bp:1"), std::string::npos) << text_of(listed);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto stopped = run(helper, {"stop"}, target.pid(), {{"names", "helper"}});
  ASSERT_TRUE(stopped.contains("result")) << stopped.dump();
  EXPECT_NE(text_of(stopped).find("xref: session 1 ended (stopped)"), std::string::npos) << text_of(stopped);
  EXPECT_EQ(stopped["result"]["ended"][0]["session"], 1);
  EXPECT_EQ(text_of(run(helper, {"stop"}, target.pid())), "xref: no running session\n");
}

TEST(ServeRun, CompletesCommandsOptionsAndFunctionNames) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  Scene scene("serve-run-complete");
  TargetProcess& target = scene.target;
  ServeClient& helper = scene.helper;
  auto candidates = [&](std::vector<std::string> words, const std::string& partial) {
    const auto answer =
        helper.request("complete", {{"argv", words}, {"partial", partial}, {"context", {{"pid", target.pid()}}}});
    return answer["result"]["candidates"].get<std::vector<std::string>>();
  };
  EXPECT_EQ(candidates({}, "tr"), std::vector<std::string>({"trace"}));
  EXPECT_EQ(candidates({"probe"}, "--cal"), std::vector<std::string>({"--callers"}));
  EXPECT_EQ(candidates({"trace", "--start"}, "handle_"), std::vector<std::string>({"handle_request"}));
  const auto routes = candidates({"probe"}, "route_");
  EXPECT_EQ(routes, std::vector<std::string>({"route_even", "route_odd"}));
}

// C++ names complete as typed (nm -C without the parameter list), in the
// executable and in a module named before ':'; a prefix is taken literally,
// never as a glob (function_glob's functions_matching expands 'prefix*').
TEST(ServeRun, CompletesCppNamesModulesAndLiteralPrefixes) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  TargetProcess target({XREF_TRACE_TARGET, "--threads", "1", "--requests", "0"});
  ServeClient helper;
  hello(helper);
  auto candidates = [&](std::vector<std::string> words, const std::string& partial) {
    const auto answer =
        helper.request("complete", {{"argv", words}, {"partial", partial}, {"context", {{"pid", target.pid()}}}});
    return answer["result"]["candidates"].get<std::vector<std::string>>();
  };
  EXPECT_EQ(candidates({"probe"}, "svc::val"), std::vector<std::string>({"svc::validate"}));
  const auto fees = candidates({"trace", "--functions"}, "svc::apply_");
  EXPECT_EQ(fees, std::vector<std::string>({"svc::apply_fee"}));
  EXPECT_TRUE(candidates({"probe"}, "svc::val*").empty()) << "a '*' typed is not a wildcard";
  EXPECT_TRUE(candidates({"probe"}, "svc::[v]al").empty()) << "a '[' typed is not a bracket expression";
  const auto getpid = candidates({"probe"}, "libc.so.6:getpi");
  EXPECT_NE(std::find(getpid.begin(), getpid.end(), "libc.so.6:getpid"), getpid.end()) << getpid.size();
}

TEST(ServeRun, OneShotCommandsPrintTheShellsText) {
  Scene scene("serve-run-maps");
  TargetProcess& target = scene.target;
  ServeClient& helper = scene.helper;
  const auto maps = run(helper, {"maps"}, target.pid());
  EXPECT_NE(text_of(maps).find("sample_service"), std::string::npos) << maps.dump();
  const auto unknown = run(helper, {"trcae"}, target.pid());
  EXPECT_NE(unknown["error"]["text"].get<std::string>().find("did you mean `xref trace`"), std::string::npos)
      << unknown.dump();
  const auto no_process = helper.request("run", {{"argv", {"maps"}}, {"context", nlohmann::json::object()}});
  EXPECT_EQ(no_process["error"]["text"], "xref: no live process; `run` or `attach` first, or name one with --pid");
}

}  // namespace
}  // namespace xref::test
