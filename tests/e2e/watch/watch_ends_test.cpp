// How a stores watch ends, and that it leaves nothing: after Ctrl-C (the
// normal end of a watch without a deadline), after --duration-ms, after
// the target exits, after the target execs (process_changed, exit status
// 5, the writes before the exec kept), and after SIGKILL of the helper.
// While it watches, the helper's descriptors hold uprobe_multi links and
// the target's code has int3 bytes; after any end those link ids are gone
// from the kernel (it frees a link with its last descriptor), the target's
// code equals its file again, and the helper's tracefs group has no
// uprobe_events line. The writes seen equal the target's record.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "watch_harness.h"
#include "watch_leftovers.h"

namespace xref::test {
namespace {

// What the watch holds while it runs, looked at from outside.
struct Armed {
  std::vector<HeldLink> links;
  size_t int3_bytes = 0;
};

Armed expect_armed(pid_t helper, const WatchTarget& target, const std::string& build) {
  Armed armed;
  armed.links = links_held_by(helper);
  size_t multi = 0;
  for (const HeldLink& link : armed.links) multi += link.type == "uprobe_multi";
  EXPECT_GE(multi, 1u) << "the watching helper holds no uprobe_multi link";
  EXPECT_EQ(links_still_there(armed.links).size(), armed.links.size());
  armed.int3_bytes = code_bytes_changed(target.pid(), watch_target_binary(build));
  EXPECT_GE(armed.int3_bytes, 1u) << "no uprobe's int3 in the target's code while it is watched";
  EXPECT_TRUE(uprobe_events_of_helper(helper).empty()) << "the stores engine defines no tracefs uprobe";
  return armed;
}

void expect_nothing_left(pid_t helper, const Armed& armed) {
  EXPECT_TRUE(links_still_there(armed.links).empty()) << "links of the ended helper are still in the kernel";
  EXPECT_TRUE(uprobe_events_of_helper(helper).empty());
}

// The writes of g_total and buf a watch saw equal the record.
void expect_record(const nlohmann::json& document, const std::vector<wt::Write>& record) {
  expect_writes_equal(recorded_writes(record, {"g_total", "buf"}), watched_writes(document, {"g_total", "buf"}));
}

// Until the running target recorded at least `writes` writes (a read may
// meet a batch half appended: then it looks again).
void wait_for_record(const WatchTarget& target, size_t writes) {
  while (true) {
    try {
      if (target.record().size() >= writes) return;
    } catch (const std::runtime_error&) {
    }
    usleep(5000);
  }
}

std::vector<std::string> watch_args(const WatchTarget& target, std::vector<std::string> more) {
  std::vector<std::string> args = {"watch", "--pid", std::to_string(target.pid()), "--backend", "stores", "--json",
                                   "--max-events", "0", target.address("g_total") + ":8", target.address("buf") + ":256"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Ctrl-C ends a watch without deadline: status 0, stop reason
// interrupted, every write the target recorded before it is there; the
// target runs on with clean code.
TEST(WatchEnds, InterruptedNothingLeftAndTheTargetRunsOn) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "0", "--interval-us", "2000"});
  BackgroundXref xref(watch_args(target, {"--duration-ms", "0"}));
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const Armed armed = expect_armed(xref.pid(), target, "watch_target");
  const pid_t helper = xref.pid();
  target.go();
  wait_for_record(target, 40);
  kill(helper, SIGINT);
  const XrefRun run = xref.finish();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["result"]["stop_reason"], "interrupted");
  EXPECT_TRUE(document["result"]["complete"].get<bool>());
  expect_nothing_left(helper, armed);
  EXPECT_EQ(code_bytes_changed(target.pid(), watch_target_binary("watch_target")), 0u)
      << "int3 bytes left in the target's code after the watch ended";
  kill(target.pid(), SIGTERM);
  EXPECT_EQ(target.finish(), 0);
  // What the watch saw is the record's beginning, per thread, exactly (the
  // record read once the target ended: a round is recorded after its writes).
  const std::vector<wt::Write> record = target.record();
  EXPECT_NO_THROW(wt::replay(target.startup(), record));
  const ThreadWrites recorded = recorded_writes(record, {"g_total", "buf"});
  const ThreadWrites watched = watched_writes(document, {"g_total", "buf"});
  size_t seen = 0;
  for (const auto& [tid, writes] : watched) {
    SCOPED_TRACE("thread " + std::to_string(tid));
    ASSERT_TRUE(recorded.count(tid));
    ASSERT_LE(writes.size(), recorded.at(tid).size());
    for (size_t i = 0; i < writes.size(); ++i) ASSERT_EQ(recorded.at(tid)[i], writes[i]) << "write " << i + 1;
    seen += writes.size();
  }
  EXPECT_GE(seen, 20u);
}

// --duration-ms: the deadline ends the watch (stop reason duration).
TEST(WatchEnds, ADeadlineEndsTheWatchAndNothingIsLeft) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "0"});
  target.go();
  BackgroundXref xref(watch_args(target, {"--duration-ms", "1500"}));
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const pid_t helper = xref.pid();
  const Armed armed = expect_armed(helper, target, "watch_target");
  const XrefRun run = xref.finish();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["result"]["stop_reason"], "duration");
  EXPECT_GT(document["result"]["writes"].size(), 0u);
  expect_nothing_left(helper, armed);
  EXPECT_EQ(code_bytes_changed(target.pid(), watch_target_binary("watch_target")), 0u);
  kill(target.pid(), SIGTERM);
  EXPECT_EQ(target.finish(), 0);
}

// The target exits while watched: status 0, stop reason target_exited,
// complete, every write equal to the record.
TEST(WatchEnds, TheTargetsExitEndsTheWatchAndNothingIsLeft) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "5"});
  BackgroundXref xref(watch_args(target, {"--duration-ms", "0"}));
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const pid_t helper = xref.pid();
  const Armed armed = expect_armed(helper, target, "watch_target");
  target.go();
  EXPECT_EQ(target.finish(), 0);
  const XrefRun run = xref.finish();
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["result"]["stop_reason"], "target_exited");
  EXPECT_TRUE(document["result"]["complete"].get<bool>());
  expect_record(document, target.record());
  expect_nothing_left(helper, armed);
}

// The target execs (the same PID, another program): the probes went with
// the old image, so the watch ends with process_changed (exit status 5,
// the JSON error object) and keeps the writes before the exec, which
// equal the record; nothing is left, and the new program runs on.
TEST(WatchEnds, AnExecEndsTheWatchWithProcessChanged) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string end_file = temp_path("end");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "5", "--exec-at-end", end_file});
  BackgroundXref xref(watch_args(target, {"--duration-ms", "0"}));
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const pid_t helper = xref.pid();
  const Armed armed = expect_armed(helper, target, "watch_target");
  target.go();
  const XrefRun run = xref.finish();  // the exec ends it; the new program waits for end_file
  std::ofstream(end_file) << "end\n";
  EXPECT_EQ(target.finish(), 0);
  unlink(end_file.c_str());
  EXPECT_EQ(run.exit_status, 5) << run.err;
  const nlohmann::json document = nlohmann::json::parse(run.out);
  EXPECT_EQ(document["error"]["code"], "process_changed") << document["error"].dump();
  EXPECT_EQ(document["result"]["stop_reason"], "target_changed");
  EXPECT_TRUE(document["result"]["unobserved_changes"].empty()) << document["result"]["unobserved_changes"].dump();
  expect_record(document, target.record());
  expect_nothing_left(helper, armed);
  // Text: the one-line error and the same status.
  WatchTarget again("watch_target", {"--threads", "1", "--rounds", "2", "--exec-at-end", end_file});
  const pid_t again_pid = again.pid();
  std::vector<std::string> text_args = watch_args(again, {"--duration-ms", "0"});
  text_args.erase(std::find(text_args.begin(), text_args.end(), "--json"));
  BackgroundXref text(text_args);
  ASSERT_TRUE(text.wait_attached()) << text.finish().err;
  again.go();
  const XrefRun text_run = text.finish();
  std::ofstream(end_file) << "end\n";
  EXPECT_EQ(again.finish(), 0);
  unlink(end_file.c_str());
  EXPECT_EQ(text_run.exit_status, 5);
  EXPECT_NE(text_run.err.find("xref: error: process " + std::to_string(again_pid) + " now runs another executable"),
            std::string::npos)
      << text_run.err;
  EXPECT_NE(text_run.err.find("; the probes went with the old executable"), std::string::npos) << text_run.err;
  EXPECT_NE(text_run.out.find("stopped: target_changed"), std::string::npos) << text_run.out;
}

// SIGKILL of the helper while it watches: no cleanup code of its runs,
// and still its links are gone (the kernel drops a uprobe_multi link with
// its last descriptor), the int3 bytes with them; the target runs on,
// unharmed, and its record stays self-consistent to the end.
TEST(WatchEnds, KillingTheHelperLeavesNothingAndHarmsNoTarget) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "2", "--rounds", "30"});
  BackgroundXref xref(watch_args(target, {"--duration-ms", "0"}));
  ASSERT_TRUE(xref.wait_attached()) << xref.finish().err;
  const pid_t helper = xref.pid();
  const Armed armed = expect_armed(helper, target, "watch_target");
  target.go();
  wait_for_record(target, 20);
  kill(helper, SIGKILL);
  const XrefRun run = xref.finish();
  EXPECT_EQ(run.exit_status, -1);  // killed
  expect_nothing_left(helper, armed);
  EXPECT_EQ(code_bytes_changed(target.pid(), watch_target_binary("watch_target")), 0u)
      << "int3 bytes left in the target's code after the helper was killed";
  EXPECT_EQ(target.finish(), 0);
  const auto record = target.record();
  EXPECT_FALSE(record.empty());
  EXPECT_NO_THROW(wt::replay(target.startup(), record));
}

}  // namespace
}  // namespace xref::test
