// A Debian program nobody here wrote, profiled by perf --call-graph dwarf:
// Debian's python3 (no frame pointers, no .symtab: static functions are
// perf's [unknown]) running tests/targets/python_profile_target.py. python3
// rather than redis-server: its time is in user space and in one process
// (redis-server under redis-benchmark spends most of its time in socket
// system calls, and the benchmark client competes for the 2 cores), its C
// stacks run through the interpreter's loop into libc, libm and libz.
//
// Checked here, for the comparison with xref's capture that comes with it:
// perf's stacks reach _start and include libc frames (malloc/free/memmove
// and brk under libz and the interpreter), and two perf recordings of the
// same interval agree path by path within 3 points (each path of at least
// 5 %) under the comparison the xref test will use (folded_stacks.h): the
// workload is steady enough for that comparison to mean something.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <thread>

#include "profile_harness.h"
#include "require.h"

namespace xref::test {
namespace {

TEST(PerfPython, StacksHoldLibcAndTwoRecordingsAgree) {
  XREF_REQUIRE_PERF();
  ScratchDir scratch;
  TargetProcess python({"/usr/bin/python3", std::string(XREF_SOURCE_DIR) + "/tests/targets/python_profile_target.py"});
  usleep(200000);
  perf::RecordOptions options;
  options.pid = python.pid();
  options.frequency = 999;
  options.seconds = 6;
  perf::Recording first, second;
  std::thread other([&] { second = perf::record(options, scratch.file("second")); });
  first = perf::record(options, scratch.file("first"));
  other.join();
  python.stop();

  size_t libc_leaves = 0, libc_frames = 0;
  for (const auto& sample : first.samples) {
    const perf::Frame* leaf = sample.user_leaf();
    if (leaf != nullptr && leaf->module == "libc.so.6") ++libc_leaves;
    // libc below the interpreter, not only its start frames
    bool above_main = false;
    for (const auto& frame : sample.frames) {
      if (frame.function == "Py_BytesMain") above_main = true;
      if (above_main && frame.module == "libc.so.6") {
        ++libc_frames;
        break;
      }
    }
  }
  const folded::Stacks stacks = perf::fold(first.samples), again = perf::fold(second.samples);
  const folded::Comparison comparison = folded::compare(stacks, again);
  const double n = static_cast<double>(first.samples.size());
  const double libc_frames_percent = 100.0 * static_cast<double>(libc_frames) / n;
  const double libc_leaves_percent = 100.0 * static_cast<double>(libc_leaves) / n;
  std::cout << "python3: " << first.samples.size() << " and " << second.samples.size() << " samples; "
            << complete_percent(stacks) << " % reach _start; libc frames above Py_BytesMain in "
            << libc_frames_percent << " %, libc the user leaf in " << libc_leaves_percent << " %\n"
            << comparison.report();
  ASSERT_GE(first.samples.size(), 1500u);
  EXPECT_GE(complete_percent(stacks), 95.0);
  EXPECT_GE(libc_frames_percent, 10.0);
  EXPECT_GE(libc_leaves_percent, 5.0);
  EXPECT_TRUE(comparison.agrees()) << comparison.report();
  // Paths through libc are among the compared ones (>= 5 %).
  bool libc_path = false;
  for (const auto& path : comparison.compared) libc_path |= path.path.find("cfree") != std::string::npos ||
                                                            path.path.find("malloc") != std::string::npos ||
                                                            path.path.find("__memmove") != std::string::npos;
  EXPECT_TRUE(libc_path) << comparison.report();
}

}  // namespace
}  // namespace xref::test
