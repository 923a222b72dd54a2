// xref probe --backend tracefs against trace_target: the counts come from
// the kernel's uprobe event records and are counted in the helper, and must
// equal what the target recorded exactly, as the BPF backends' do. And the
// tracefs bookkeeping: nothing of the helper's stays in tracefs after it
// ends, however it ends; --stop-when is refused; --backend auto counts with
// tracefs where BPF is refused; a serve session counts with tracefs.
#include <dirent.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <climits>

#include "probe_harness.h"
#include "serve_client.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

constexpr int kInvalidArgument = 2;  // docs/cli.md

// The xref process this test started (its child running XREF_BINARY), 0
// when there is none.
pid_t xref_child() {
  pid_t found = 0;
  DIR* proc = opendir("/proc");
  while (dirent* entry = proc ? readdir(proc) : nullptr) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    char exe[PATH_MAX] = {};
    if (readlink(("/proc/" + name + "/exe").c_str(), exe, sizeof exe - 1) <= 0 || std::string(exe) != XREF_BINARY) {
      continue;
    }
    std::ifstream stat("/proc/" + name + "/stat");
    std::string text;
    std::getline(stat, text);
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    char state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == getpid()) found = std::stoi(name);
  }
  if (proc) closedir(proc);
  return found;
}

// A probe run and the helper that ran it.
struct HelperRun {
  XrefRun run;
  pid_t helper = 0;
};

// `xref probe --pid TARGET --json --duration-ms 0 --backend tracefs ARGS`,
// the target's requests released once the probes are in. `in_child` runs in
// the helper's process before the exec.
HelperRun probe_with(ProbedTarget& probed, const std::vector<std::string>& args, const std::string& backend = "tracefs",
                     const std::function<void()>& in_child = {}) {
  std::vector<std::string> all = {"probe",         "--pid", std::to_string(probed.target.pid()), "--json",
                                  "--duration-ms", "0",     "--backend",                          backend};
  all.insert(all.end(), args.begin(), args.end());
  HelperRun result;
  const std::string go_file = probed.record_file.go_file();
  result.run = run_program(XREF_BINARY, all, {in_child, [&] {
                                                result.helper = xref_child();
                                                if (FILE* go = fopen(go_file.c_str(), "w")) fclose(go);
                                              }});
  return result;
}

// Nothing of `helper`'s stays in tracefs: no uprobe event of its group, no
// instance, no watchdog.
void expect_nothing_left(pid_t helper) {
  ASSERT_GT(helper, 0) << "the helper's PID was not seen";
  EXPECT_FALSE(group_defined(helper)) << uprobe_events();
  EXPECT_FALSE(instance_exists(helper)) << instance_of(helper);
  EXPECT_EQ(watchdog_of(helper), 0);
}

bool has_warning(const nlohmann::json& document, const std::string& prefix) {
  for (const auto& warning : document["warnings"]) {
    if (warning.get<std::string>().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Every hit the target recorded is counted: by thread, and by caller, as
// the return address at the entry reads it.
TEST(ProbeTracefs, CountsThreadsAndCallersEqualTheRecord) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  ProbedTarget probed;
  const HelperRun probe = probe_with(probed, {"svc::settle", "svc::validate", "--callers"});
  ASSERT_EQ(probe.run.exit_status, kProcessExited) << probe.run.err << probe.run.out;
  const auto document = probe.run.json();
  EXPECT_EQ(document["backend"], "tracefs");
  EXPECT_TRUE(has_warning(document, "tracefs_counts: ")) << document["warnings"].dump();
  expect_entry_counts_equal_record(document, probed.record(), {"settle", "validate"});
  expect_nothing_left(probe.helper);
}

// Inside a function the return address is read at the CFA rule's slot, a
// fetch arg relative to rsp or rbp: the callers are still the record's.
TEST(ProbeTracefs, CallersInsideAFunctionEqualTheRecord) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const std::string va = va_inside_settle();
  ASSERT_FALSE(va.empty());
  ProbedTarget probed;
  const HelperRun probe = probe_with(probed, {va, "--callers"});
  ASSERT_EQ(probe.run.exit_status, kProcessExited) << probe.run.err << probe.run.out;
  expect_inferred_callers_equal_record(probe.run.json(), va, probed.record());
  expect_nothing_left(probe.helper);
}

// --filter, evaluated in the helper over the fetched values, passes exactly
// the recorded calls it should; --group-by a fetched value and --hist
// count them by value; --group-by ret counts settle's return values at its
// rets.
TEST(ProbeTracefs, FilterAndGroupsEqualTheRecordedValues) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  ProbedTarget probed;
  const HelperRun probe = probe_with(
      probed, {"svc::settle", "--fetch", "d=%di:u64", "--filter", "d >= 1", "--group-by", "d", "--hist", "d"});
  ASSERT_EQ(probe.run.exit_status, kProcessExited) << probe.run.err << probe.run.out;
  const auto document = probe.run.json();
  const auto record = probed.record();
  expect_filtered_groups_equal_record(document, record);
  EXPECT_EQ(address_of(document, "svc::settle")["unfiltered"], 0);
  // --hist d: the passing calls by the power of two at or below d.
  std::map<uint64_t, uint64_t> expected_buckets, buckets;
  for (const auto& [d, count] : recorded_calls(record, "settle").by_first_arg) {
    if (d >= 1) expected_buckets[uint64_t{1} << (63 - __builtin_clzll(d))] += count;
  }
  for (const auto& bucket : address_of(document, "svc::settle")["hist"]["buckets"]) {
    buckets[bucket["from"].get<uint64_t>()] = bucket["hits"].get<uint64_t>();
  }
  EXPECT_EQ(buckets, expected_buckets);
  expect_nothing_left(probe.helper);

  ProbedTarget returns;
  const HelperRun by_ret = probe_with(returns, {"svc::settle", "--group-by", "ret"});
  ASSERT_EQ(by_ret.run.exit_status, kProcessExited) << by_ret.run.err;
  expect_ret_groups_equal_record(by_ret.run.json(), returns.record());
  expect_nothing_left(by_ret.helper);
}

// --until-hits stops at exactly that many passing hits, counted in the
// order the hits ran; --every 3 --first 5 samples hits 3, 6, ... 15, each
// with the id of a request its thread ran.
TEST(ProbeTracefs, UntilHitsAndSamplesAreExact) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  ProbedTarget probed;
  const HelperRun probe = probe_with(
      probed, {"svc::validate", "--fetch", "id=%di:u64", "--every", "3", "--first", "5", "--until-hits", "30"});
  ASSERT_EQ(probe.run.exit_status, 0) << probe.run.err << probe.run.out;
  const auto document = probe.run.json();
  EXPECT_EQ(document["summary"]["stop_reason"], "until_hits");
  const auto& address = address_of(document, "svc::validate");
  EXPECT_EQ(address["passed"].get<uint64_t>(), 30u);
  EXPECT_EQ(address["hits"].get<uint64_t>(), 30u) << "nothing counts past the bound";
  std::vector<uint64_t> hits;
  for (const auto& sample : address["samples"]) hits.push_back(sample["hit"].get<uint64_t>());
  EXPECT_EQ(hits, (std::vector<uint64_t>{3, 6, 9, 12, 15}));
  uint64_t threads_total = 0;
  for (const auto& [tid, count] : thread_counts(address)) threads_total += count;
  EXPECT_EQ(threads_total, 30u);
  const auto record = probed.record();
  for (const auto& sample : address["samples"]) {
    const uint64_t id = std::stoull(sample["fetches"][0]["value"].get<std::string>(), nullptr, 16);
    EXPECT_EQ(record.count({sample["tid"].get<uint32_t>(), id}), 1u) << sample.dump();
  }
  expect_nothing_left(probe.helper);
}

// A per-CPU buffer too small for a burst loses records: those hits are not
// counted, the summary says how many records were lost, and the result is
// not complete.
TEST(ProbeTracefs, LostRecordsMakeTheResultIncomplete) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file(next_record_name());
  TargetProcess bursty({XREF_TRACE_TARGET, "--record", record_file.path, "--go-file", record_file.go_file(),
                        "--interval-us", "100000", "--burst", "3000", "--requests", "3"});
  const std::vector<std::string> args = {"probe",   "--pid",     std::to_string(bursty.pid()), "--json",
                                         "--duration-ms", "0",   "--backend",  "tracefs",
                                         "svc::tick", "--ringbuf-bytes", "4096"};
  pid_t helper = 0;
  const XrefRun run = run_xref_attached(args, [&] {
    helper = xref_child();
    record_file.release();
  });
  ASSERT_EQ(run.exit_status, kProcessExited) << run.err << run.out;
  const auto document = run.json();
  uint64_t recorded = 0;
  for (const auto& [key, events] : read_record(record_file.path)) {
    for (const auto& event : events) recorded += event.kind == '>' && event.function == "tick";
  }
  EXPECT_EQ(recorded, 3u * 3000u);
  const uint64_t hits = address_of(document, "svc::tick")["hits"].get<uint64_t>();
  const uint64_t lost = document["summary"]["lost_events"].get<uint64_t>();
  EXPECT_GT(lost, 0u);
  EXPECT_LT(hits, recorded);
  // Every recorded hit is counted or lost (the buffer may also have lost
  // hits of other processes running trace_target).
  EXPECT_GE(hits + lost, recorded);
  EXPECT_EQ(document["summary"]["complete"], false);
  EXPECT_TRUE(has_warning(document, "tracefs_lost: " + std::to_string(lost) + " records")) << document["warnings"];
  expect_nothing_left(helper);
}

// Killed with SIGKILL while its probes are in, the helper cannot clean up:
// its watchdog removes its events and its instance, and the target's code
// reads back as its file.
TEST(ProbeTracefs, NothingStaysAfterTheHelperIsKilled) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const pid_t helper = spawn_xref({"probe", "--pid", std::to_string(target.pid()), "svc::settle", "svc::validate",
                                   "--callers", "--backend", "tracefs", "--duration-ms", "0"});
  ASSERT_GT(helper, 0);
  ASSERT_TRUE(await_tracing(helper)) << "the helper never started probing";
  const pid_t watchdog = watchdog_of(helper);
  ASSERT_GT(watchdog, 0) << "no watchdog";
  const TracefsProbes probes = expect_probes_in(helper, target.pid(), XREF_TRACE_TARGET);
  EXPECT_EQ(probes.offsets.size(), 2u);

  kill(helper, SIGKILL);
  int status = 0;
  waitpid(helper, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  expect_all_removed(helper, watchdog, target.pid(), probes);
}

// --stop-when sends a signal from the hit itself, in BPF: with tracefs it
// is refused in one line before anything is attached.
TEST(ProbeTracefs, StopWhenIsRefused) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const std::vector<std::string> args = {"probe",      "--pid",     std::to_string(target.pid()), "svc::validate",
                                         "--fetch",    "id=%di:u64", "--stop-when", "id == 3",
                                         "--backend", "tracefs"};
  const XrefRun text = run_xref(args);
  EXPECT_EQ(text.exit_status, kInvalidArgument) << text.err;
  EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << text.err;
  EXPECT_NE(text.err.find("--stop-when needs a BPF backend, not tracefs"), std::string::npos) << text.err;
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const XrefRun json = run_xref(json_args);
  EXPECT_EQ(json.exit_status, kInvalidArgument);
  EXPECT_EQ(json.json()["error"]["message"], "--stop-when needs a BPF backend, not tracefs") << json.out;
  EXPECT_FALSE(attached_line(text.err + json.err)) << "refused before anything was attached";
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target runs on";
}

// Where a seccomp profile refuses bpf(2) with EPERM, as a container's may:
// --backend auto probes with tracefs instead, says so, and counts the same.
void refuse_bpf_syscall() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    _exit(126);
  }
}

TEST(ProbeTracefs, AutoFallsBackToTracefsWhereBpfIsRefused) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  ProbedTarget probed;
  const HelperRun probe = probe_with(probed, {"svc::validate", "--callers"}, "auto", refuse_bpf_syscall);
  ASSERT_EQ(probe.run.exit_status, kProcessExited) << probe.run.err << probe.run.out;
  const auto document = probe.run.json();
  EXPECT_EQ(document["backend"], "tracefs");
  EXPECT_TRUE(has_warning(document, "backend_fallback: BPF cannot be used here")) << document["warnings"].dump();
  EXPECT_NE(probe.run.err.find("(backend tracefs)"), std::string::npos) << probe.run.err;
  const RecordedCalls expected = recorded_calls(probed.record(), "validate");
  const auto& address = address_of(document, "svc::validate");
  EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total);
  EXPECT_EQ(thread_counts(address), expected.by_tid);
  EXPECT_EQ(caller_counts(address), expected.by_caller);
  expect_nothing_left(probe.helper);

  // Only auto falls back: a BPF backend asked for by name fails as BPF does.
  const RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "0"}));
  record_file.release();
  const XrefRun named = run_program(
      XREF_BINARY, {"probe", "--pid", std::to_string(target.pid()), "svc::validate", "--backend", "uprobe_multi",
                    "--json"},
      {refuse_bpf_syscall, {}});
  EXPECT_NE(named.exit_status, 0) << named.out;
  EXPECT_EQ(named.json()["error"]["code"], "permission_denied") << named.out;
}

// A session of `xref serve` probes with tracefs: its drain brings the counts
// so far, its end the document, whose counts equal the record; the
// session's events and instance are gone when it ends.
TEST(ProbeTracefs, ServeSessionCountsWithTracefs) {
  XREF_REQUIRE(tracefs_usable(), "root and tracefs uprobe_events");
  const RecordFile record_file(next_record_name());
  TargetProcess target(target_command(record_file.path, {"--requests", "60", "--interval-us", "1000"}));
  ServeClient helper;
  ASSERT_EQ(helper.read()["type"], "hello");
  ASSERT_TRUE(helper.request("hello", {{"protocol", 1}}).contains("result"));
  const auto started = helper.request(
      "session.start", {{"argv", {"probe", "svc::validate", "--callers", "--duration-ms", "0", "--backend", "tracefs"}},
                        {"context", {{"pid", target.pid()}}}});
  ASSERT_TRUE(started.contains("result")) << started.dump();
  const uint64_t session = started["result"]["session"];
  EXPECT_EQ(started["result"]["backend"], "tracefs");
  EXPECT_TRUE(group_defined(helper.pid()));
  // A second tracefs session of this helper would share its names.
  const auto second = helper.request(
      "session.start",
      {{"argv", {"probe", "svc::settle", "--backend", "tracefs"}}, {"context", {{"pid", target.pid()}}}});
  EXPECT_TRUE(second.contains("error")) << second.dump();
  record_file.release();

  EXPECT_EQ(helper.request("drain")["result"]["drained"], true);
  const auto update = helper.await_event("probe_update", session);
  const uint64_t at_drain = update["counts"]["addresses"][0]["passed"].get<uint64_t>();
  EXPECT_EQ(update["document"]["addresses"][0]["passed"].get<uint64_t>(), at_drain) << update.dump();

  const auto ended = helper.await_event("session_ended", session);
  EXPECT_EQ(ended["stop_reason"], "target_exited") << ended.dump();
  const auto& address = ended["document"]["addresses"][0];
  const RecordedCalls expected = recorded_calls(read_record(record_file.path), "validate");
  EXPECT_EQ(expected.total, 60u);
  EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total);
  EXPECT_LE(at_drain, expected.total);
  EXPECT_EQ(caller_counts(address), expected.by_caller);
  EXPECT_EQ(ended["document"]["backend"], "tracefs");
  EXPECT_FALSE(group_defined(helper.pid())) << uprobe_events();
  EXPECT_FALSE(instance_exists(helper.pid()));
}

}  // namespace
}  // namespace xref::test
