// MarkWriteClock with its real BPF program: the bytes of write, pwrite and
// writev calls on a watched file get the time the call returned, a file
// created later under the watched name is timed from its first write, and
// other files are not recorded.
#include "mark/write_clock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "monotonic_clock.h"
#include "require.h"

namespace xref {
namespace {

struct StatOf {
  explicit StatOf(const std::string& path) { EXPECT_EQ(stat(path.c_str(), &status), 0) << path; }
  struct stat status {};
};

class MarkWriteClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xref-clock-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "app.log").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(MarkWriteClockTest, WritesAreTimedByTheBytesTheyWrote) {
  XREF_REQUIRE(geteuid() == 0, "root for BPF");
  auto clock = MarkWriteClock::start();
  ASSERT_TRUE(clock) << clock.error().message;
  const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  const StatOf file(path_);
  (*clock)->watch(file.status.st_dev, file.status.st_ino);

  const uint64_t before_first = monotonic_ns();
  ASSERT_EQ(write(fd, "first\n", 6), 6);  // bytes 0..5
  const uint64_t between = monotonic_ns();
  char second[] = "sec", ond[] = "ond\n";
  iovec parts[2] = {{second, 3}, {ond, 4}};
  ASSERT_EQ(writev(fd, parts, 2), 7);  // bytes 6..12
  const uint64_t after_second = monotonic_ns();
  const int plain = open(path_.c_str(), O_WRONLY);
  ASSERT_EQ(pwrite(plain, "F", 1, 0), 1);  // byte 0 again
  const uint64_t after_pwrite = monotonic_ns();
  close(plain);
  close(fd);

  (*clock)->drain();
  auto first = (*clock)->written_at(file.status.st_dev, file.status.st_ino, 5);
  ASSERT_TRUE(first) << "the newline of the first write";
  EXPECT_GT(*first, before_first);
  EXPECT_LT(*first, between);
  auto second_newline = (*clock)->written_at(file.status.st_dev, file.status.st_ino, 12);
  ASSERT_TRUE(second_newline) << "writev";
  EXPECT_GT(*second_newline, between);
  EXPECT_LT(*second_newline, after_second);
  auto rewritten = (*clock)->written_at(file.status.st_dev, file.status.st_ino, 0);
  ASSERT_TRUE(rewritten) << "pwrite at offset 0";
  EXPECT_GT(*rewritten, after_second);
  EXPECT_LT(*rewritten, after_pwrite);
  EXPECT_EQ((*clock)->written_at(file.status.st_dev, file.status.st_ino, 13), std::nullopt) << "never written";
  EXPECT_EQ((*clock)->lost_writes(), 0u);
}

TEST_F(MarkWriteClockTest, AFileCreatedLaterUnderTheNameIsTimedOthersAreNot) {
  XREF_REQUIRE(geteuid() == 0, "root for BPF");
  auto clock = MarkWriteClock::start();
  ASSERT_TRUE(clock) << clock.error().message;
  ASSERT_TRUE((*clock)->watch_path(path_));
  const std::string other = (dir_ / "other.log").string();
  for (const std::string& path : {path_, other}) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "line\n", 5), 5);
    close(fd);
  }
  (*clock)->drain();
  const StatOf created(path_), unrelated(other);
  EXPECT_TRUE((*clock)->written_at(created.status.st_dev, created.status.st_ino, 4));
  EXPECT_FALSE((*clock)->written_at(unrelated.status.st_dev, unrelated.status.st_ino, 4));
}

}  // namespace
}  // namespace xref
