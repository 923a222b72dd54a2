// xref watch's bad input: one line naming the input with a hint, its own
// exit status, the JSON error object with --json, and the target unharmed.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "watch_harness.h"

namespace xref::test {
namespace {

// The first mapping of `pid` whose permissions are `perms`.
uint64_t mapping_with(pid_t pid, const std::string& perms) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream words(line);
    std::string range, mode;
    words >> range >> mode;
    if (mode == perms) return std::stoull(range.substr(0, range.find('-')), nullptr, 16);
  }
  return 0;
}

struct BadInput {
  std::vector<std::string> args;
  int status;
  std::string code;
  std::string names;  // the message names the input
};

TEST(WatchInput, BadInputIsOneLineWithItsOwnStatusAndTheTargetRuns) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  WatchTarget target("watch_target", {"--threads", "1", "--rounds", "3"});
  const std::string pid = std::to_string(target.pid());
  const std::string code = hex_string(mapping_with(target.pid(), "r-xp") + 0x10);
  const std::string read_only = hex_string(mapping_with(target.pid(), "r--p") + 0x10);
  const std::vector<BadInput> cases = {
      {{"no_such_object"}, 22, "unknown_symbol", "no_such_object"},
      {{"main"}, 22, "unknown_symbol", "main"},  // a function is no data symbol
      {{code + ":8"}, 23, "not_data", code},
      {{read_only + ":8"}, 24, "read_only_address", read_only},
      {{"0x10:8"}, 8, "address_unmapped", "0x10"},
      {{target.address("g_total") + ":0"}, 25, "bad_length", ":0"},
      {{target.address("g_total") + ":99999999"}, 25, "bad_length", "99999999"},
      {{"--follow", "moving_slot+8:8"}, 2, "invalid_argument", "moving_slot+8:8"},
      {{"--follow", "moving_slot->+8"}, 2, "invalid_argument", "moving_slot->+8"},
  };
  for (const BadInput& bad : cases) {
    SCOPED_TRACE(bad.args.back());
    std::vector<std::string> args = {"watch", "--pid", pid, "--backend", "stores"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    const XrefRun text = run_xref(args);
    EXPECT_EQ(text.exit_status, bad.status) << text.err;
    EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << text.err;
    EXPECT_NE(text.err.find(bad.names), std::string::npos) << text.err;
    EXPECT_NE(text.err.find("; "), std::string::npos) << "no hint: " << text.err;
    args.push_back("--json");
    const XrefRun json = run_xref(args);
    EXPECT_EQ(json.exit_status, bad.status);
    const auto document = json.json();
    EXPECT_EQ(document["operation"], "live_watch");
    EXPECT_EQ(document["error"]["code"], bad.code);
    EXPECT_EQ(document["error"]["exit_status"], bad.status);
  }
  EXPECT_EQ(program_links("watch_store"), 0);
  // The target was never touched: it runs its rounds and its record replays.
  target.go();
  EXPECT_EQ(target.finish(), 0);
  EXPECT_NO_THROW(wt::replay(target.startup(), target.record()));
}

}  // namespace
}  // namespace xref::test
