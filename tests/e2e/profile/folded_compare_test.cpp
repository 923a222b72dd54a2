// The truth tests' own tools, on known input: the folded-stack comparison
// (each caller path of >= 5 % within 3 points), perf script's parser, and
// the check of stacks against profile_target's record. No process is
// profiled here: these prove the tools can fail.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>

#include "profile_harness.h"

namespace xref::test {
namespace {

TEST(FoldedStacks, ParseAddsRepeatedStacksAndRefusesOtherLines) {
  const folded::Stacks stacks = folded::parse("main;a;b 3\nmain;a 2\n\nmain;a;b 5\r\n");
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks.at("main;a;b"), 8u);
  EXPECT_EQ(stacks.at("main;a"), 2u);
  EXPECT_EQ(folded::total(stacks), 10u);
  EXPECT_EQ(folded::parse(folded::format(stacks)), stacks);
  for (const char* bad : {"main;a", "main;a x", " 3", "main;a 3x", "main;a -3"}) {
    EXPECT_THROW(folded::parse(bad), std::runtime_error) << bad;
  }
}

TEST(FoldedStacks, PathSharesCountEveryPrefix) {
  const auto shares = folded::path_shares(folded::parse("main;a;b 50\nmain;a;c 30\nmain;d 20\n"));
  EXPECT_DOUBLE_EQ(shares.at("main"), 100);
  EXPECT_DOUBLE_EQ(shares.at("main;a"), 80);
  EXPECT_DOUBLE_EQ(shares.at("main;a;b"), 50);
  EXPECT_DOUBLE_EQ(shares.at("main;d"), 20);
  EXPECT_EQ(shares.count("a"), 0u);  // a path starts at the root
}

TEST(FoldedStacks, EqualProfilesAgree) {
  const auto stacks = folded::parse("main;a;b 50\nmain;a;c 30\nmain;d 20\n");
  const auto comparison = folded::compare(stacks, stacks);
  EXPECT_TRUE(comparison.agrees());
  EXPECT_EQ(comparison.compared.size(), 5u);  // main, main;a, main;a;b, main;a;c, main;d
}

TEST(FoldedStacks, SharesNotCountsAreCompared) {
  // the same split at ten times the samples
  const auto comparison = folded::compare(folded::parse("main;a 60\nmain;b 40\n"), folded::parse("main;a 600\nmain;b 400\n"));
  EXPECT_TRUE(comparison.agrees());
}

TEST(FoldedStacks, ThreePointsAgreeAndMoreDiffer) {
  const auto base = folded::parse("main;a 50\nmain;b 50\n");
  EXPECT_TRUE(folded::compare(base, folded::parse("main;a 53\nmain;b 47\n")).agrees());
  const auto comparison = folded::compare(base, folded::parse("main;a 54\nmain;b 46\n"));
  EXPECT_FALSE(comparison.agrees());
  ASSERT_EQ(comparison.differing.size(), 2u);
  EXPECT_EQ(comparison.differing[0].path, "main;a");
  EXPECT_DOUBLE_EQ(comparison.differing[0].first, 50);
  EXPECT_DOUBLE_EQ(comparison.differing[0].second, 54);
}

TEST(FoldedStacks, APathMissingFromOneSideIsCompared) {
  // main;c holds 10 % in the second profile only: compared (at 0 %) and differing
  const auto comparison = folded::compare(folded::parse("main;a 50\nmain;b 50\n"),
                                          folded::parse("main;a 45\nmain;b 45\nmain;c 10\n"));
  EXPECT_FALSE(comparison.agrees());
  bool found = false;
  for (const auto& path : comparison.differing) {
    if (path.path == "main;c") {
      found = true;
      EXPECT_DOUBLE_EQ(path.first, 0);
      EXPECT_DOUBLE_EQ(path.second, 10);
    }
  }
  EXPECT_TRUE(found) << comparison.report();
}

TEST(FoldedStacks, PathsUnderFivePercentAreNotCompared) {
  // main;c: 4 % against 0 %, under 5 % in both: not compared
  const auto comparison = folded::compare(folded::parse("main;a 48\nmain;b 48\nmain;c 4\n"),
                                          folded::parse("main;a 50\nmain;b 50\n"));
  EXPECT_TRUE(comparison.agrees()) << comparison.report();
  for (const auto& path : comparison.compared) EXPECT_NE(path.path, "main;c");
}

TEST(FoldedStacks, NothingComparedIsNoAgreement) {
  EXPECT_FALSE(folded::compare({}, folded::parse("main 1\n")).agrees());
  EXPECT_FALSE(folded::compare(folded::parse("main 1\n"), {}).agrees());
}

TEST(PerfScript, ParsesSamplesRootFirstWithTheKernelAsOneFrame) {
  const std::string text =
      "pt worker 0  1693/1695     1001001 cpu-clock: \n"
      "\tffffffff82242009 pvm_irq_enable ([kernel.kallsyms])\n"
      "\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])\n"
      "\t             c01 __vdso_clock_gettime ([vdso])\n"
      "\t           cf438 clock_gettime@@GLIBC_2.17 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
      "\t            32b5 leaf_c (/work/build/profile_target)\n"
      "\t           891f4 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
      "\t          1098eb clone3 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
      "\n"
      "pt-main  1693/1693     1001001 cpu-clock: \n"
      "\t            31ac leaf_a (/work/build/profile_target)\n"
      "\t            2c20 _start (/work/build/profile_target)\n"
      "\n";
  const auto samples = perf::parse_script(text);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].comm, "pt worker 0");
  EXPECT_EQ(samples[0].pid, 1693);
  EXPECT_EQ(samples[0].tid, 1695);
  EXPECT_EQ(samples[0].period, 1001001u);
  ASSERT_EQ(samples[0].frames.size(), 6u);
  EXPECT_EQ(samples[0].frames.front().function, "clone3");
  EXPECT_EQ(samples[0].frames[3].function, "clock_gettime");
  EXPECT_EQ(samples[0].frames[3].module, "libc.so.6");
  EXPECT_EQ(samples[0].frames[3].address, 0xcf438u);
  EXPECT_EQ(samples[0].frames.back().function, "[kernel]");
  EXPECT_EQ(samples[0].user_leaf()->function, "__vdso_clock_gettime");
  const auto stacks = perf::fold(samples);
  EXPECT_EQ(stacks.at("clone3;start_thread;leaf_c;clock_gettime;__vdso_clock_gettime;[kernel]"), 1u);
  EXPECT_EQ(stacks.at("_start;leaf_a"), 1u);
  const auto shares = perf::function_shares(samples);
  EXPECT_DOUBLE_EQ(shares.at("leaf_a").self, 50);
  EXPECT_DOUBLE_EQ(shares.at("leaf_c").self, 0);
  EXPECT_DOUBLE_EQ(shares.at("leaf_c").total, 50);
  EXPECT_THROW(perf::parse_script("\tdeadbeef orphan (x)\n"), std::runtime_error);
  EXPECT_THROW(perf::parse_script("no header here\n"), std::runtime_error);
}

pt::Record two_leaf_record() {
  std::istringstream text(
      "pid 10\nsplit 1 60 40 0 0\nsplit 2 10 20 30 40\nthread 10 pt-main main\ncpu 10 1 1000\ncpu 10 2 0\n"
      "leaf 10 1 leaf_a 600 5 main;work_loop;run_a;mid_a;leaf_a\n"
      "leaf 10 1 leaf_b 400 5 main;work_loop;run_b;chain_b1;chain_b2;chain_b3;leaf_b\nend\n");
  return pt::parse_record(text);
}

TEST(ProfileTargetRecord, AgreementCountsSharesAndPaths) {
  const pt::Record record = two_leaf_record();
  EXPECT_DOUBLE_EQ(record.leaf_share("leaf_a"), 60);
  // 58 on leaf_a's path (2 of them under clock_gettime and the kernel), 2
  // reaching leaf_a from elsewhere; leaf_b's 40 on its path
  const auto agreements = agree_with_record(
      folded::parse("_start;main;work_loop;run_a;mid_a;leaf_a 56\n"
                    "_start;main;work_loop;run_a;mid_a;leaf_a;clock_gettime;[kernel] 2\n"
                    "_start;main;work_loop;run_c;leaf_a 2\n"
                    "_start;main;work_loop;run_b;chain_b1;chain_b2;chain_b3;leaf_b 40\n"),
      record);
  ASSERT_EQ(agreements.size(), 4u);
  EXPECT_EQ(agreements[0].leaf, "leaf_a");
  EXPECT_DOUBLE_EQ(agreements[0].total, 60);
  EXPECT_DOUBLE_EQ(agreements[0].self, 58);  // the 2 under clock_gettime are not self, the 2 from run_c are
  EXPECT_EQ(agreements[0].samples, 60u);
  EXPECT_EQ(agreements[0].on_path, 58u);
  EXPECT_DOUBLE_EQ(agreements[1].total, 40);
  EXPECT_EQ(agreements[1].on_path, 40u);
  EXPECT_EQ(agreements[2].samples, 0u);
}

TEST(ProfileTargetRecord, APathMustStartAtTheRecordedRoot) {
  // a stack cut short below the root (perf's copy ran out) is not on the path
  const auto agreements = agree_with_record(folded::parse("work_loop;run_a;mid_a;leaf_a 10\n"
                                                          "[unknown];xmain;work_loop;run_a;mid_a;leaf_a 10\n"),
                                            two_leaf_record());
  EXPECT_EQ(agreements[0].samples, 20u);
  EXPECT_EQ(agreements[0].on_path, 0u);
  EXPECT_DOUBLE_EQ(complete_percent(folded::parse("_start;main 3\nclone3;x 1\nwork_loop 4\n")), 50);
}

TEST(ProfileTargetRecord, BadRecordsAreRefused) {
  for (const char* bad : {"pid 1\n", "pid 1\nleaf 1 1 leaf_a 5\nend\n", "pid 1\ncpu 2 1 5\nend\n", "bogus\nend\n",
                          "pid 1 2\nend\n"}) {
    std::istringstream text(bad);
    EXPECT_THROW(pt::parse_record(text), std::runtime_error) << bad;
  }
}

}  // namespace
}  // namespace xref::test
