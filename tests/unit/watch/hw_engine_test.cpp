// The hw engine's breakpoints, seen from outside the engine: one per range
// per thread (each target thread has that many fewer debug registers free:
// perf_event_open of one more fails with ENOSPC), copies inherited by the
// threads created after arming (their registers are taken too, and the time
// enabled of the opened events grows by their CPU time), and none left
// after detach or after the helper is killed with SIGKILL. All of this
// holds whether or not the registers fire on this host, so nothing here is
// skipped for that (start_hw_watch_engine_untested opens them anyway).
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "require.h"
#include "target_process.h"
#include "watch/detail.h"
#include "watch/hw_engine.h"
#include "watch/hw_threads.h"
#include "watch/stop_when.h"

namespace xref {
namespace {

const std::string kTarget = std::string(XREF_TARGETS_DIR) + "/hw_threads_target-gcc";

// The helper's own descriptors whose link reads `kind`.
std::vector<int> descriptors_of(const std::string& kind) {
  std::vector<int> found;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char link[256] = {};
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0 && kind == link) found.push_back(std::stoi(entry->d_name));
  }
  closedir(dir);
  return found;
}

std::vector<int> perf_descriptors() { return descriptors_of("anon_inode:[perf_event]"); }
std::vector<int> link_descriptors() { return descriptors_of("anon_inode:bpf_link"); }

// How many debug registers thread `tid` has free: write breakpoints opened on
// it until the kernel says ENOSPC (its slot accounting is the same whether
// or not the registers fire). -errno on another failure.
int free_debug_registers(uint32_t tid, uint64_t address) {
  std::vector<int> opened;
  int result = 0;
  for (int slot = 0; slot < 5; ++slot) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_BREAKPOINT;
    attr.bp_type = HW_BREAKPOINT_W;
    attr.bp_addr = address + 8u * static_cast<unsigned>(slot);
    attr.bp_len = HW_BREAKPOINT_LEN_8;
    attr.exclude_kernel = 1;
    const long fd = syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      result = errno == ENOSPC ? static_cast<int>(opened.size()) : -errno;
      break;
    }
    opened.push_back(static_cast<int>(fd));
    result = static_cast<int>(opened.size());
  }
  for (const int fd : opened) close(fd);
  return result;
}

std::vector<uint32_t> thread_ids(pid_t pid) {
  std::vector<uint32_t> tids;
  for (const TargetThread& thread : list_target_threads(pid)) tids.push_back(thread.tid);
  return tids;
}

WatchPlan words_plan(const test::TargetProcess& target, std::vector<uint32_t> words) {
  WatchPlan plan;
  plan.pid = target.pid();
  for (const uint32_t word : words) {
    WatchRange range;
    range.address = target.value("obj", "words") + 8u * word;
    range.length = 8;
    range.spelled = "words[" + std::to_string(word) + "]";
    plan.ranges.push_back(range);
  }
  return plan;
}

// The time enabled, summed over the helper's perf events (each read gives
// value, time enabled, time running: the engine's read_format).
uint64_t enabled_ns() {
  uint64_t total = 0;
  for (const int fd : perf_descriptors()) {
    uint64_t values[3] = {};
    if (read(fd, values, sizeof values) == sizeof values) total += values[1];
  }
  return total;
}

std::string temporary_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("xref-hw-" + std::to_string(getpid()) + "-" + name))
      .string();
}

void wait_for_file(const std::string& path) {
  while (access(path.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(HwEngine, OneBreakpointPerRangePerThreadAndNoneAfterDetach) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  test::TargetProcess target({kTarget, "--threads", "3"});
  const uint64_t words = target.value("obj", "words");
  const std::vector<uint32_t> tids = thread_ids(target.pid());
  ASSERT_EQ(tids.size(), 4u);  // main and 3 threads
  for (const uint32_t tid : tids) ASSERT_EQ(free_debug_registers(tid, words), 4) << "thread " << tid;
  const size_t perf_before = perf_descriptors().size();
  const size_t links_before = link_descriptors().size();

  WatchRequest request;
  auto engine = start_hw_watch_engine_untested(words_plan(target, {0, 2}), request, [](WatchRecord&&) {});
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ((*engine)->backend(), "hw");
  EXPECT_EQ(perf_descriptors().size(), perf_before + 2 * tids.size());
  EXPECT_EQ(link_descriptors().size(), links_before + 2 * tids.size());
  for (const uint32_t tid : tids) EXPECT_EQ(free_debug_registers(tid, words), 2) << "thread " << tid;
  ASSERT_TRUE((*engine)->arm());
  ASSERT_TRUE((*engine)->drain());

  (*engine)->detach();
  EXPECT_EQ(perf_descriptors().size(), perf_before);
  EXPECT_EQ(link_descriptors().size(), links_before);
  for (const uint32_t tid : tids) EXPECT_EQ(free_debug_registers(tid, words), 4) << "thread " << tid;
}

// --fetch, --filter, --regs and --callers make the program carry a detail
// after each record and run probe's fetch and filter code at each trap: it
// must still load, pass the verifier and attach to every thread's event
// (whether the registers fire here or not), with the filter's names
// resolved, and leave nothing behind.
TEST(HwEngine, TheProgramWithFetchFilterRegsAndCallersLoadsAndAttaches) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  test::TargetProcess target({kTarget, "--threads", "1"});
  const std::vector<uint32_t> tids = thread_ids(target.pid());
  const size_t perf_before = perf_descriptors().size();
  WatchRequest request;
  request.fetch = "sp=%sp:u64,word=+0(%sp):u64,name=+0(%sp):string[16]";
  request.filter = "value > old && word != 0 || name == \"x*\"";
  request.regs = true;
  request.callers = true;
  WatchPlan plan = words_plan(target, {1});
  ASSERT_TRUE(plan_watch_detail(request, plan));
  ASSERT_TRUE(plan.filter);
  EXPECT_EQ(plan.fetches.size(), 3u);
  auto engine = start_hw_watch_engine_untested(plan, request, [](WatchRecord&&) {});
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ(perf_descriptors().size(), perf_before + tids.size());
  ASSERT_TRUE((*engine)->arm());
  ASSERT_TRUE((*engine)->drain());
  (*engine)->detach();
  EXPECT_EQ(perf_descriptors().size(), perf_before);
}

// `value` and `old` are integers of the range's 1, 2, 4 or 8 bytes: a filter
// that names them over a range of another length is refused, naming it.
TEST(HwEngine, AFilterOnValueOverARangeOfNoIntegerLengthIsRefused) {
  WatchPlan plan;
  WatchRange range;
  range.address = 0x1000;
  range.length = 12;
  range.spelled = "buf:12";
  plan.ranges.push_back(range);
  WatchRequest request;
  request.filter = "value == 3";
  auto refused = plan_watch_detail(request, plan);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("buf:12 is 12 bytes"), std::string::npos) << refused.error().message;
  request.fetch = "n=%di:u64";
  request.filter = "n == 3";  // no `value`: any range will do
  EXPECT_TRUE(plan_watch_detail(request, plan));
  request.fetch = "value=%di:u64";
  EXPECT_FALSE(plan_watch_detail(request, plan));  // the watch's own name
}

// --stop-when's check is in the program (bpf/watch_stop.bpf.h): with a
// condition the kernel's verifier accepts it, and nothing has stopped yet.
TEST(HwEngine, TheProgramLoadsWithAStopCondition) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  test::TargetProcess target({kTarget, "--threads", "1"});
  WatchRequest request;
  request.stop_when = "value == 7 || old > 9";
  request.stop_skip = 1;
  auto condition = compile_watch_stop(request);
  ASSERT_TRUE(condition) << condition.error().message;
  WatchPlan plan = words_plan(target, {0});
  plan.stop_filter = *condition;
  auto engine = start_hw_watch_engine_untested(plan, request, [](WatchRecord&&) {});
  ASSERT_TRUE(engine) << engine.error().message;
  ASSERT_TRUE((*engine)->arm());
  EXPECT_FALSE((*engine)->stop().has_value());
  (*engine)->detach();
}

TEST(HwEngine, ThreadsCreatedAfterArmingInheritTheBreakpoints) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  const std::string go = temporary_path("go"), done = temporary_path("done");
  std::remove(go.c_str());
  std::remove(done.c_str());
  constexpr int kLate = 3;
  constexpr uint64_t kBusyMs = 150;
  test::TargetProcess target({kTarget, "--threads", "1", "--late", std::to_string(kLate), "--late-busy-ms",
                              std::to_string(kBusyMs), "--go", go, "--done", done});
  const uint64_t words = target.value("obj", "words");
  const std::vector<uint32_t> early = thread_ids(target.pid());
  ASSERT_EQ(early.size(), 2u);

  WatchRequest request;
  auto engine = start_hw_watch_engine_untested(words_plan(target, {1}), request, [](WatchRecord&&) {});
  ASSERT_TRUE(engine) << engine.error().message;
  ASSERT_TRUE((*engine)->arm());
  const uint64_t enabled_before = enabled_ns();
  { FILE* file = std::fopen(go.c_str(), "w"); ASSERT_NE(file, nullptr); std::fclose(file); }
  wait_for_file(done);
  ASSERT_TRUE((*engine)->drain());

  // Every late thread holds one inherited breakpoint: one register taken.
  std::vector<uint32_t> late;
  for (const uint32_t tid : thread_ids(target.pid())) {
    if (std::find(early.begin(), early.end(), tid) == early.end()) late.push_back(tid);
  }
  ASSERT_EQ(late.size(), static_cast<size_t>(kLate));
  for (const uint32_t tid : late) EXPECT_EQ(free_debug_registers(tid, words), 3) << "late thread " << tid;
  // And the opened events' time enabled grew by at least the late threads'
  // CPU time (the kernel sums an inherited copy's time into its parent's).
  EXPECT_GE(enabled_ns() - enabled_before, kLate * kBusyMs * 1'000'000);

  (*engine)->detach();
  for (const uint32_t tid : thread_ids(target.pid())) EXPECT_EQ(free_debug_registers(tid, words), 4) << tid;
  std::remove(go.c_str());
  std::remove(done.c_str());
}

// --follow's move: every thread's breakpoint of the range is modified in
// place (PERF_EVENT_IOC_MODIFY_ATTRIBUTES), none opened or closed; a null
// pointer parks the range, an address the register cannot take is refused.
TEST(HwEngine, MoveRangeModifiesEveryThreadsBreakpointInPlace) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  test::TargetProcess target({kTarget, "--threads", "2"});
  const uint64_t words = target.value("obj", "words");
  const std::vector<uint32_t> tids = thread_ids(target.pid());
  const size_t perf_before = perf_descriptors().size();
  WatchRequest request;
  auto engine = start_hw_watch_engine_untested(words_plan(target, {0}), request, [](WatchRecord&&) {});
  ASSERT_TRUE(engine) << engine.error().message;
  ASSERT_TRUE((*engine)->arm());
  const std::vector<int> opened = perf_descriptors();
  ASSERT_TRUE((*engine)->move_range(0, words + 16));
  EXPECT_EQ(perf_descriptors(), opened);
  for (const uint32_t tid : tids) EXPECT_EQ(free_debug_registers(tid, words), 3) << "thread " << tid;
  ASSERT_TRUE((*engine)->move_range(0, 0));  // parked: its breakpoints disabled, still held
  EXPECT_EQ(perf_descriptors(), opened);
  ASSERT_TRUE((*engine)->move_range(0, words + 24));
  const auto unaligned = (*engine)->move_range(0, words + 4);
  ASSERT_FALSE(unaligned);
  EXPECT_EQ(unaligned.error().code, ErrorCode::debug_register_rule);
  (*engine)->detach();
  EXPECT_EQ(perf_descriptors().size(), perf_before);
}

// A helper killed with SIGKILL never detaches: its descriptors close with
// it, and the kernel removes every breakpoint, inherited copies included.
// Nothing of them is in the target to look at but the debug registers each
// thread has free again.
TEST(HwEngine, NothingLeftWhenTheHelperIsKilled) {
  XREF_REQUIRE(geteuid() == 0, "root (perf breakpoints on another process, BPF)");
  const std::string go = temporary_path("kill-go"), done = temporary_path("kill-done");
  std::remove(go.c_str());
  std::remove(done.c_str());
  test::TargetProcess target({kTarget, "--threads", "2", "--late", "2", "--late-busy-ms", "20", "--go", go, "--done",
                              done});
  const uint64_t words = target.value("obj", "words");
  int armed[2];
  ASSERT_EQ(pipe(armed), 0);
  const pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    close(armed[0]);
    WatchRequest request;
    auto engine = start_hw_watch_engine_untested(words_plan(target, {0, 1, 3}), request, [](WatchRecord&&) {});
    if (!engine || !(*engine)->arm()) _exit(1);
    if (FILE* file = std::fopen(go.c_str(), "w")) std::fclose(file);
    wait_for_file(done);
    const char byte = 'a';
    if (write(armed[1], &byte, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(armed[1]);
  char byte = 0;
  ASSERT_EQ(read(armed[0], &byte, 1), 1) << "the helper process did not arm";
  close(armed[0]);
  const std::vector<uint32_t> tids = thread_ids(target.pid());
  ASSERT_EQ(tids.size(), 5u);  // main, 2 early, 2 late (inherited)
  for (const uint32_t tid : tids) EXPECT_EQ(free_debug_registers(tid, words), 1) << "thread " << tid;

  ASSERT_EQ(kill(helper, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFSIGNALED(status));
  // The exiting helper closed its descriptors (task work run before it
  // became a zombie), so by waitpid every breakpoint is gone.
  for (const uint32_t tid : tids) EXPECT_EQ(free_debug_registers(tid, words), 4) << "thread " << tid;
  std::remove(go.c_str());
  std::remove(done.c_str());
}

}  // namespace
}  // namespace xref
