// xref doctor must report what the host really does: BPF and uprobe_multi
// work here, the tracefs backend can run (and its trial instance is gone
// afterwards), and its hardware-breakpoint verdict must agree with an
// independent self-test run by this test.
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "require.h"
#include "run_xref.h"

namespace xref::test {
namespace {

volatile uint64_t watched_word = 0;

bool hardware_breakpoints_fire_here() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = reinterpret_cast<uint64_t>(&watched_word);
  attr.bp_len = HW_BREAKPOINT_LEN_8;
  attr.exclude_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  for (int i = 0; i < 10; ++i) watched_word = watched_word + 1;
  uint64_t count = 0;
  const bool read_ok = read(static_cast<int>(fd), &count, sizeof count) == sizeof count;
  close(static_cast<int>(fd));
  return read_ok && count == 10;
}

TEST(DoctorCli, ReportsWhatTheHostDoes) {
  const XrefRun run = run_xref({"doctor", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["operation"], "doctor");
  const auto& usable = document["data"]["usable"];
  for (const char* check : {"privileges", "btf", "bpf_load", "perf_uprobe", "uprobe_multi", "ringbuf", "tracefs",
                            "tracefs_backend", "mark_write_clock", "hardware_perf_events", "software_perf_events",
                            "hardware_breakpoints"}) {
    EXPECT_TRUE(usable.contains(check)) << check;
  }
  XREF_REQUIRE(usable["bpf_load"] == true, "BPF program load (run as root)");
  EXPECT_EQ(usable["ringbuf"], true);
  EXPECT_EQ(usable["perf_uprobe"], true);
  XREF_REQUIRE(usable["uprobe_multi"] == true, "uprobe_multi link (kernel 6.6+)");
  XREF_REQUIRE(usable["tracefs"] == true, "tracefs");
  XREF_REQUIRE(usable["tracefs_backend"] == true, "tracefs backend (uprobe_events and an ftrace instance)");
  XREF_REQUIRE(usable["mark_write_clock"] == true, "the --mark-file write clock (raw syscall tracepoints)");
  // The trial instance doctor created is removed again. The detail reads
  // "TRACEFS_ROOT: uprobe_events writable, instances/xref-PID-START created ...".
  std::string backend_detail;
  for (const auto& check : document["data"]["checks"]) {
    if (check["name"] == "tracefs_backend") backend_detail = check["detail"];
  }
  const size_t instance = backend_detail.find("instances/xref-");
  ASSERT_NE(instance, std::string::npos) << backend_detail;
  const std::string instance_dir = backend_detail.substr(0, backend_detail.find(':')) + "/" +
                                   backend_detail.substr(instance, backend_detail.find(' ', instance) - instance);
  EXPECT_NE(access(instance_dir.c_str(), F_OK), 0) << instance_dir << " is left behind";
  EXPECT_EQ(usable["hardware_breakpoints"], hardware_breakpoints_fire_here());
  EXPECT_EQ(usable["software_perf_events"], true);

  const XrefRun text = run_xref({"doctor"});
  EXPECT_NE(text.out.find("uprobe_multi          ok"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tracefs_backend       ok"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace xref::test
