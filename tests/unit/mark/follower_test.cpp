// MarkFollower on real files, polled by hand: which line stamps a window
// opened at a given time, across appends, partial lines, rotation,
// truncation and bounded reads; MarkRegex's groups and errors.
#include "mark/follower.h"
#include "monotonic_clock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace xref {
namespace {

class MarkFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xref-mark-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "app.log").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void append(const std::string& text) const { std::ofstream(path_, std::ios::app) << text; }

  std::unique_ptr<MarkFollower> follow(const std::string& pattern, MarkFollowerLimits limits = {}) const {
    auto regex = MarkRegex::compile(pattern);
    EXPECT_TRUE(regex) << regex.error().message;
    auto follower = MarkFollower::open(path_, std::move(*regex), limits);
    EXPECT_TRUE(follower) << follower.error().message;
    return std::move(*follower);
  }

  static std::string match_of(const MarkStamp& stamp) {
    return stamp.status == MarkStamp::Status::matched ? stamp.line->match : mark_status_name(stamp.status);
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(MarkFollowerTest, LinesAlreadyInTheFileStampLaterWindows) {
  append("start\nbatch 7 begin\nnoise\nbatch 8 begin\ntail\n");
  auto follower = follow("^batch ([0-9]+)");
  const MarkStamp stamp = follower->stamp(monotonic_ns());
  ASSERT_EQ(stamp.status, MarkStamp::Status::matched);
  EXPECT_EQ(stamp.line->match, "8");
  EXPECT_EQ(stamp.line->text, "batch 8 begin");
  EXPECT_TRUE(stamp.certain);
}

TEST_F(MarkFollowerTest, NoMatchingLineYet) {
  append("start\n");
  auto follower = follow("^batch");
  EXPECT_EQ(follower->stamp(monotonic_ns()).status, MarkStamp::Status::no_match_yet);
  append("batch 1\n");
  const MarkStamp stamp = follower->stamp(monotonic_ns());
  ASSERT_EQ(stamp.status, MarkStamp::Status::matched);
  EXPECT_EQ(stamp.line->match, "batch") << "without a group the whole match is the mark";
}

TEST_F(MarkFollowerTest, AWindowGetsTheLineBeforeItNotTheOneAfter) {
  append("batch 1\n");
  auto follower = follow("batch ([0-9]+)");
  const uint64_t opened = monotonic_ns();
  follower->poll();  // read to the end after the window opened: later lines are later
  append("batch 2\n");
  follower->poll();
  const MarkStamp before = follower->stamp(opened);
  EXPECT_EQ(match_of(before), "1");
  EXPECT_TRUE(before.certain);
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "2");
}

TEST_F(MarkFollowerTest, ALineReadOnlyAfterTheWindowOpenedIsUncertain) {
  append("batch 1\n");
  auto follower = follow("batch ([0-9]+)");
  follower->poll();
  append("batch 2\n");
  const uint64_t opened = monotonic_ns();  // batch 2 was written before, but not yet read
  const MarkStamp stamp = follower->stamp(opened);
  EXPECT_EQ(match_of(stamp), "2");
  EXPECT_FALSE(stamp.certain);
}

TEST_F(MarkFollowerTest, APartialLineWaitsForItsNewline) {
  append("batch 1\nbatch 2");
  auto follower = follow("batch ([0-9]+)");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "1");
  append("5\n");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "25");
}

TEST_F(MarkFollowerTest, RotationReadsTheOldFileToItsEndThenTheNewOne) {
  append("batch 1\n");
  auto follower = follow("batch ([0-9]+)");
  append("batch 2\n");  // written to the old file before it is renamed
  std::filesystem::rename(path_, path_ + ".1");
  append("other\n");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "2") << "the new file has no match yet";
  append("batch 3\n");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "3");
  const uint64_t between = monotonic_ns();
  follower->poll();
  std::filesystem::rename(path_, path_ + ".1");  // a second rotation
  append("batch 4\n");
  EXPECT_EQ(match_of(follower->stamp(between)), "3");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "4");
}

TEST_F(MarkFollowerTest, RenamedAwayWithNoNewFileKeepsTheOldLines) {
  append("batch 1\n");
  auto follower = follow("batch ([0-9]+)");
  std::filesystem::rename(path_, path_ + ".1");
  follower->poll();
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "1");
  append("batch 2\n");  // the path comes back
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "2");
}

TEST_F(MarkFollowerTest, TruncationStartsOverFromTheBeginning) {
  append("batch 1\nbatch 2\nbatch 3\n");
  auto follower = follow("batch ([0-9]+)");
  ASSERT_EQ(truncate(path_.c_str(), 0), 0);
  append("batch 9\n");  // shorter than what was read: read again from 0
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "9");
}

TEST_F(MarkFollowerTest, ReadsAreBoundedPerPoll) {
  append("");
  auto follower = follow("batch ([0-9]+)", MarkFollowerLimits{.read_per_poll = 16});
  for (int i = 1; i <= 20; ++i) append("batch " + std::to_string(i) + "\n");
  follower->poll();  // 16 bytes: "batch 1\nbatch 2\n"
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "4") << "the stamp's own poll reads 16 bytes more";
  MarkStamp stamp;
  for (int poll = 0; poll < 20 && match_of(stamp) != "20"; ++poll) stamp = follower->stamp(monotonic_ns());
  EXPECT_EQ(match_of(stamp), "20");
}

TEST_F(MarkFollowerTest, OnlyTheTailOfABigFileIsReadAtOpen) {
  append("batch 1\n" + std::string(100, 'x') + "\nnoise\n");
  auto follower = follow("batch ([0-9]+)", MarkFollowerLimits{.initial_tail = 20});
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "no_match_yet") << "batch 1 is before the tail";
  append("batch 2\n");
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "2");
}

TEST_F(MarkFollowerTest, LongLinesAreCutBeforeMatching) {
  append(std::string(200, 'y') + " batch 5\nbatch 6" + std::string(200, 'z') + "\n");
  auto follower = follow("batch ([0-9]+)", MarkFollowerLimits{.max_line = 64});
  const MarkStamp stamp = follower->stamp(monotonic_ns());
  EXPECT_EQ(match_of(stamp), "6");
  EXPECT_EQ(stamp.line->text.size(), 64u);
}

TEST_F(MarkFollowerTest, OlderLinesThanTheHistoryKeepsAreEvicted) {
  append("batch 1\n");
  auto follower = follow("batch ([0-9]+)", MarkFollowerLimits{.history = 2});
  const uint64_t opened = monotonic_ns();
  follower->poll();
  append("batch 2\nbatch 3\nbatch 4\n");
  follower->poll();
  EXPECT_EQ(follower->stamp(opened).status, MarkStamp::Status::evicted);
  EXPECT_EQ(match_of(follower->stamp(monotonic_ns())), "4");
}

TEST_F(MarkFollowerTest, AFileThatCannotBeReadIsRefused) {
  auto regex = MarkRegex::compile("x");
  ASSERT_TRUE(regex);
  auto missing = MarkFollower::open(path_ + ".absent", *regex);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
  auto directory = MarkFollower::open(dir_.string(), *regex);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("not a regular file"), std::string::npos);
}

// open() of a FIFO with no writer would wait forever; it is refused at once.
TEST_F(MarkFollowerTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "fifo.log").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto regex = MarkRegex::compile("x");
  ASSERT_TRUE(regex);
  auto refused = MarkFollower::open(fifo, *regex);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(refused.error().message, "--mark-file " + fifo + " is not a regular file (it is a FIFO)");
  EXPECT_EQ(refused.error().hint, "give the log file itself; pipes and devices cannot be followed");
}

// A FIFO put in the log's place at a rotation does not block the poll: the
// follower stops, and says why.
TEST_F(MarkFollowerTest, AFifoInTheLogsPlaceAfterARotationIsNotFollowed) {
  append("batch 1\n");
  auto follower = follow("^batch ([0-9]+)");
  std::filesystem::rename(path_, path_ + ".1");
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  const MarkStamp stamp = follower->stamp(monotonic_ns() + 1000000000ull);
  EXPECT_EQ(stamp.status, MarkStamp::Status::unreadable);
  EXPECT_NE(stamp.error.find("is not a regular file (it is a FIFO)"), std::string::npos) << stamp.error;
}

// A pseudo filesystem's regular files are the kernel's or a process's
// state: /proc/self/mem is xref's own memory, /sys/kernel/btf/vmlinux the
// kernel's types. Neither is a log; both are refused, naming the
// filesystem. A log on tmpfs (/dev/shm) is a log.
TEST_F(MarkFollowerTest, FilesOfProcAndSysAreRefused) {
  auto regex = MarkRegex::compile("x");
  ASSERT_TRUE(regex);
  const std::pair<std::string, std::string> pseudo[] = {{"/proc/self/mem", "procfs"},
                                                        {"/proc/self/status", "procfs"},
                                                        {"/sys/kernel/btf/vmlinux", "sysfs"}};
  for (const auto& [path, filesystem] : pseudo) {
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path << " is a regular file, as stat says";
    auto refused = MarkFollower::open(path, *regex);
    ASSERT_FALSE(refused) << path;
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << path;
    EXPECT_EQ(refused.error().message, "--mark-file " + path + " is on " + filesystem +
                                           ", a pseudo filesystem: its files are the kernel's or a process's state, "
                                           "not a log");
    EXPECT_EQ(refused.error().hint, "give the log file an application writes, e.g. /var/log/app.log");
    EXPECT_FALSE(MarkFollower::check(path)) << path;
  }
  const std::string shm = "/dev/shm/xref-mark-test-" + std::to_string(getpid()) + ".log";
  std::ofstream(shm) << "batch 7\n";
  auto on_tmpfs = MarkFollower::open(shm, *regex);
  EXPECT_TRUE(on_tmpfs) << on_tmpfs.error().message;
  std::filesystem::remove(shm);
}

// The same after a rotation: a symlink to /proc/self/environ put in the
// log's place is not followed, and the follower says why.
TEST_F(MarkFollowerTest, AProcFileInTheLogsPlaceAfterARotationIsNotFollowed) {
  append("batch 1\n");
  auto follower = follow("^batch ([0-9]+)");
  std::filesystem::rename(path_, path_ + ".1");
  std::filesystem::create_symlink("/proc/self/environ", path_);
  const MarkStamp stamp = follower->stamp(monotonic_ns() + 1000000000ull);
  EXPECT_EQ(stamp.status, MarkStamp::Status::unreadable);
  EXPECT_EQ(stamp.error, "after rotation, --mark-file " + path_ +
                             " is on procfs, a pseudo filesystem: its files are the kernel's or a process's state, "
                             "not a log");
}

TEST(MarkRegex, ABackreferenceIsRefusedAsUnsupported) {
  for (const char* pattern : {"^(a*)*\\1b$", "(x)\\9"}) {
    auto refused = MarkRegex::compile(pattern);
    ASSERT_FALSE(refused) << pattern;
    EXPECT_EQ(refused.error().code, ErrorCode::unsupported_regex);
    EXPECT_NE(refused.error().message.find("has a backreference (\\"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("RE2"), std::string::npos);
    EXPECT_NE(refused.error().hint.find("without backreferences"), std::string::npos);
  }
}

// Patterns that make a backtracking matcher take exponential time match in
// linear time: the results are what POSIX says.
TEST(MarkRegex, PatternsThatBacktrackingChokesOnStillMatch) {
  const std::string as(1u << 16, 'a');
  auto nested = MarkRegex::compile("^(a+)+$");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->match(as + "b"), std::nullopt);
  EXPECT_EQ(nested->match(as), as);
  auto stars = MarkRegex::compile("^(a*)*b$");
  ASSERT_TRUE(stars);
  EXPECT_EQ(stars->match(as + "c"), std::nullopt);
  EXPECT_EQ(stars->match(as + "b"), as) << "the last iteration of the group";
}

// grep -E as before: POSIX classes, leftmost-longest, bytes not UTF-8, and
// the \d \s \w \b GNU grep takes too.
TEST(MarkRegex, GrepExtendedSyntax) {
  auto classes = MarkRegex::compile("^req[[:space:]]+([[:digit:]]+)");
  ASSERT_TRUE(classes);
  EXPECT_EQ(classes->match("req  42 ok"), "42");
  auto perl = MarkRegex::compile("\\bid=(\\d+)\\s");
  ASSERT_TRUE(perl);
  EXPECT_EQ(perl->match("x id=7 y"), "7");
  EXPECT_EQ(perl->match("xid=7 y"), std::nullopt);
  auto longest = MarkRegex::compile("(a|ab)(c|bcd)");
  ASSERT_TRUE(longest);
  EXPECT_EQ(longest->match("abcd"), "a") << "leftmost-longest: abcd as a + bcd";
  auto bytes = MarkRegex::compile("^batch (.)$");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->match("batch \xff"), "\xff") << "a byte that is not UTF-8 is still a character";
}

TEST(MarkRegex, ARegexThatDoesNotCompileIsRefused) {
  auto bad = MarkRegex::compile("batch ([0-9]+");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(bad.error().message.find("does not compile"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(MarkRegex::compile(""));
}

TEST(MarkRegex, TheFirstGroupIsTheMark) {
  auto regex = MarkRegex::compile("height=([0-9]+) hash=([a-f0-9]+)");
  ASSERT_TRUE(regex);
  EXPECT_EQ(regex->match("block height=812 hash=ab12"), "812");
  EXPECT_EQ(regex->match("block height=x"), std::nullopt);
  auto optional_group = MarkRegex::compile("batch( [0-9]+)?");
  ASSERT_TRUE(optional_group);
  EXPECT_EQ(optional_group->match("batch done"), "batch") << "an unmatched group falls back to the whole match";
}

}  // namespace
}  // namespace xref
