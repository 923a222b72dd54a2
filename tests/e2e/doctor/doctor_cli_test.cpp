// xref doctor must report what the host really does: BPF and uprobe_multi
// work here, the tracefs backend can run (and its trial instance is gone
// afterwards), and its hardware-breakpoint verdict must agree with an
// independent self-test run by this test.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "breakpoint_fires.h"
#include "require.h"
#include "run_xref.h"

namespace xref::test {
namespace {

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
  EXPECT_EQ(usable["hardware_breakpoints"], breakpoints_fire_here(10));
  EXPECT_EQ(usable["software_perf_events"], true);

  const XrefRun text = run_xref({"doctor"});
  EXPECT_NE(text.out.find("uprobe_multi          ok"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tracefs_backend       ok"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace xref::test
