// profile_target checked on its own, without any profiler: its record
// matches the split it was given (its calibration), phase 2 switches the
// split, every build keeps the frames the paths name (objdump: each path
// function reaches the next with a call, never a tail jump), and the builds
// are what their names say (frame pointers, PIE, stripped).
#include <gtest/gtest.h>

#include <signal.h>

#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "profile_harness.h"

namespace xref::test {
namespace {

const std::vector<std::string> kBuilds = {"profile_target",       "profile_target_clang",    "profile_target_nopie",
                                          "profile_target_clang_nopie", "profile_target_fp", "profile_target_clang_fp",
                                          "profile_target_stripped", "profile_target_clang_stripped"};

// Runs the target for about SECONDS of wall time; phase 2 after half of it when asked.
pt::Record run_target(const std::string& build, std::vector<std::string> args, double seconds, bool phase2) {
  ProfileTarget target(build, args);
  target.go();
  usleep(static_cast<useconds_t>(seconds * (phase2 ? 0.5e6 : 1e6)));
  if (phase2) {
    target.phase2();
    usleep(static_cast<useconds_t>(seconds * 0.5e6));
  }
  return target.finish();
}

class ProfileTargetBuilds : public ::testing::TestWithParam<std::string> {};

// The leaves' recorded shares are the split within a point, in every
// thread: the calibration the profile tests rely on.
TEST_P(ProfileTargetBuilds, RecordMatchesTheSplit) {
  const pt::Record record = run_target(GetParam(), {"--threads", "2", "--split", "50,25,15,10"}, 2.0, false);
  ASSERT_EQ(record.threads.size(), 3u);
  EXPECT_EQ(record.threads[0].name, "pt-main");
  EXPECT_EQ(record.threads[0].root, "main");
  EXPECT_EQ(record.threads[1].name, "pt-worker0");
  EXPECT_EQ(record.threads[2].root, "worker_main");
  const double expected[] = {50, 25, 15, 10};
  for (size_t leaf = 0; leaf < 4; ++leaf) {
    EXPECT_NEAR(record.leaf_share(pt::leaf_names()[leaf]), expected[leaf], 1.0) << pt::leaf_names()[leaf];
  }
  double leaves = 0;
  for (const auto& name : pt::leaf_names()) leaves += record.leaf_share(name);
  EXPECT_GT(leaves, 99.0) << "the leaves must hold nearly all the working threads' CPU";
  EXPECT_LE(leaves, 100.0);
  for (const auto& thread : record.threads) {
    EXPECT_GT(thread.cpu_ns[0], 0u) << thread.name;
    EXPECT_EQ(thread.cpu_ns[1], 0u) << thread.name << " had no phase 2";
    EXPECT_EQ(record.path(thread.tid, "leaf_b"),
              thread.root + ";work_loop;run_b;chain_b1;chain_b2;chain_b3;leaf_b");
    EXPECT_EQ(record.path(thread.tid, "leaf_r"), thread.root + ";work_loop;run_r;recurse;recurse;recurse;recurse;leaf_r");
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, ProfileTargetBuilds, ::testing::ValuesIn(kBuilds),
                         [](const auto& test) { return binary_test_name(test.param); });

TEST(ProfileTarget, Phase2SwitchesTheSplit) {
  const pt::Record record =
      run_target("profile_target", {"--threads", "1", "--split", "70,10,10,10", "--split2", "10,10,10,70", "--depth", "7"},
                 3.0, true);
  EXPECT_EQ(record.split[1][3], 70u);
  EXPECT_NEAR(record.leaf_share("leaf_a", 1), 70, 1.5);
  EXPECT_NEAR(record.leaf_share("leaf_r", 1), 10, 1.5);
  EXPECT_NEAR(record.leaf_share("leaf_a", 2), 10, 1.5);
  EXPECT_NEAR(record.leaf_share("leaf_r", 2), 70, 1.5);
  for (const auto& thread : record.threads) EXPECT_GT(thread.cpu_ns[1], 0u) << thread.name;
  std::string recursion;
  for (int i = 0; i < 7; ++i) recursion += "recurse;";
  EXPECT_EQ(record.path(record.threads.at(1).tid, "leaf_r"), "worker_main;work_loop;run_r;" + recursion + "leaf_r");
}

// SIGUSR1 switches the phase as the phase2 file does; SIGTERM stops as the stop file does.
TEST(ProfileTarget, SignalsSwitchAndStop) {
  ScratchDir scratch;
  TargetProcess target({profile_target_binary("profile_target_clang"), "--threads", "1", "--record",
                        scratch.file("record")});
  usleep(500000);
  kill(target.pid(), SIGUSR1);
  usleep(500000);
  kill(target.pid(), SIGTERM);
  const int status = target.wait_exit();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const pt::Record record = pt::read_record(scratch.file("record"));
  EXPECT_NEAR(record.leaf_share("leaf_a", 2), 10, 3.0);  // the default phase 2: 10,20,30,40
  EXPECT_NEAR(record.leaf_share("leaf_r", 2), 40, 3.0);
}

TEST(ProfileTarget, BadArgumentsExit2) {
  for (const auto& args : std::vector<std::string>{"--split 50,30,30,10", "--split 50,50", "--threads 17",
                                                    "--depth 0", "--bogus", "--record", "--threads 0 --no-main-work"}) {
    const std::string command = profile_target_binary("profile_target") + " " + args + " 2>&1; echo \"exit $?\"";
    const std::string output = command_output(command);
    EXPECT_NE(output.find("usage: profile_target"), std::string::npos) << args << ": " << output;
    EXPECT_NE(output.find("exit 2"), std::string::npos) << args << ": " << output;
  }
}

// Every function of the paths reaches the next with a call (a frame of its
// own, a return address in the caller), never a tail jump, in every build
// with symbols; the hot loops hold the instructions they are named for.
class ProfileTargetCode : public ::testing::TestWithParam<std::string> {};

TEST_P(ProfileTargetCode, PathsAreRealCalls) {
  const std::string binary = profile_target_binary(GetParam());
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"main", "work_loop"},     {"worker_main", "work_loop"}, {"work_loop", "run_a"},   {"run_a", "mid_a"},
      {"mid_a", "leaf_a"},       {"work_loop", "run_b"},       {"run_b", "chain_b1"},    {"chain_b1", "chain_b2"},
      {"chain_b2", "chain_b3"},  {"chain_b3", "leaf_b"},       {"work_loop", "run_c"},   {"run_c", "leaf_c"},
      {"work_loop", "run_r"},    {"run_r", "recurse"},         {"recurse", "recurse"},   {"recurse", "leaf_r"}};
  const std::string listing = command_output("objdump -d --no-show-raw-insn " + binary);
  // The instruction lines of FUNCTION.
  auto body = [&](const std::string& function) {
    std::vector<std::string> lines;
    const size_t start = listing.find("<" + function + ">:\n");
    EXPECT_NE(start, std::string::npos) << function;
    if (start == std::string::npos) return lines;
    std::istringstream text(listing.substr(start, listing.find("\n\n", start) - start));
    std::string line;
    while (std::getline(text, line)) lines.push_back(line);
    return lines;
  };
  auto has = [](const std::vector<std::string>& lines, const std::string& mnemonic, const std::string& target) {
    for (const auto& line : lines) {
      const size_t tab = line.find('\t');
      if (tab != std::string::npos && line.compare(tab + 1, mnemonic.size(), mnemonic) == 0 &&
          line.size() >= target.size() && line.compare(line.size() - target.size(), target.size(), target) == 0) {
        return true;
      }
    }
    return false;
  };
  for (const auto& [caller, callee] : calls) {
    const auto code = body(caller);
    EXPECT_TRUE(has(code, "call", "<" + callee + ">")) << caller << " does not call " << callee;
    EXPECT_FALSE(has(code, "jmp", "<" + callee + ">")) << caller << " tail-jumps to " << callee;
  }
  auto holds = [&](const std::string& function, const std::string& mnemonic) {
    for (const auto& line : body(function)) {
      if (line.find("\t" + mnemonic) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(holds("leaf_a", "imul"));
  EXPECT_TRUE(holds("leaf_b", "shl"));
  EXPECT_TRUE(holds("leaf_c", "div"));
  EXPECT_TRUE(holds("leaf_r", "rol"));
  const bool frame_pointers = GetParam().find("_fp") != std::string::npos;
  EXPECT_EQ(holds("mid_a", "mov    %rsp,%rbp"), frame_pointers) << "frame pointers";
}
INSTANTIATE_TEST_SUITE_P(Builds, ProfileTargetCode,
                         ::testing::Values("profile_target", "profile_target_clang", "profile_target_nopie",
                                           "profile_target_clang_nopie", "profile_target_fp", "profile_target_clang_fp"),
                         [](const auto& test) { return binary_test_name(test.param); });

TEST(ProfileTarget, BuildsAreWhatTheirNamesSay) {
  for (const auto& build : kBuilds) {
    const std::string binary = profile_target_binary(build);
    const std::string header = command_output("readelf -hW " + binary);
    const bool pie = header.find("DYN (") != std::string::npos;
    EXPECT_EQ(pie, build.find("nopie") == std::string::npos) << build;
    const std::string sections = command_output("readelf -SW " + binary);
    EXPECT_EQ(sections.find(".symtab") == std::string::npos, build.find("stripped") != std::string::npos) << build;
    EXPECT_NE(sections.find(".eh_frame "), std::string::npos) << build;
    const std::string comment = command_output("readelf -p .comment " + binary);
    EXPECT_EQ(comment.find("clang") != std::string::npos, build.find("clang") != std::string::npos) << build;
  }
}

}  // namespace
}  // namespace xref::test
