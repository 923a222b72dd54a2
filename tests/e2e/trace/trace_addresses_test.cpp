// trace --start NAME+OFF: windows open at that instruction of the function
// (objdump's listing gives the instruction starts), the first event of each
// window is the start probe there; one inside an instruction is refused with
// the starts on either side.
#include <gtest/gtest.h>

#include "run_xref.h"
#include "sample_target.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

std::vector<uint64_t> handle_request_instructions() {
  std::vector<uint64_t> starts;
  for (const auto& line : command_lines("objdump -d --no-show-raw-insn --disassemble=handle_request " +
                                        std::string(XREF_SAMPLE_SERVICE))) {
    const size_t colon = line.find(":\t");
    if (!line.empty() && line[0] == ' ' && colon != std::string::npos) {
      starts.push_back(std::stoull(line.substr(0, colon), nullptr, 16));
    }
  }
  return starts;
}

TEST(TraceAddresses, StartAtSymbolPlusOffset) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const uint64_t function = target.nm.at("handle_request");
  const auto starts = handle_request_instructions();
  ASSERT_GE(starts.size(), 4u);
  ASSERT_EQ(starts[0], function);
  const uint64_t offset = starts[1] - function;  // after `push rbp`: the frame is known there
  const XrefRun run = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request+" + std::to_string(offset),
                                "--duration-ms", "300", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  const auto& windows = document["windows"];
  ASSERT_GT(windows.size(), 0u) << "the service handles a request every 2 ms";
  for (const auto& window : windows) {
    const auto& first = window["events"][0];
    EXPECT_EQ(first["kind"], "entry");
    EXPECT_EQ(first["symbol"], "handle_request");
    EXPECT_EQ(first["probe_va"], hex(starts[1]));
  }

  size_t wide = 0;
  while (wide + 1 < starts.size() && starts[wide + 1] - starts[wide] < 2) ++wide;
  ASSERT_LT(wide + 1, starts.size());
  const std::string inside = "handle_request+" + hex(starts[wide] + 1 - function);
  const XrefRun refused = run_xref({"trace", "--pid", target.pid(), "--start", inside, "--json"});
  EXPECT_EQ(refused.exit_status, 13) << refused.out;
  const auto error = refused.json()["error"];
  EXPECT_EQ(error["code"], "not_an_instruction");
  EXPECT_EQ(error["message"].get<std::string>().rfind("--start " + inside + ": ", 0), 0u) << error.dump();
  EXPECT_EQ(error["hint"], "use the instruction start handle_request+" + hex(starts[wide] - function) +
                               " or the next one, handle_request+" + hex(starts[wide + 1] - function));
}

}  // namespace
}  // namespace xref::test
