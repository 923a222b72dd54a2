// Files the user names, opened with the user's rights under sudo: who the
// sudo user is (SUDO_UID, SUDO_GID, the group database), and what the
// opener opens for nobody. The opener is started in a child process (a
// death test), so this process keeps root's rights for the other tests.
#include "input/user_files.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "input/sudo_user.h"
#include "require.h"

namespace xref {
namespace {

std::optional<SudoUser> nobody() {
  const passwd* entry = getpwnam("nobody");
  if (entry == nullptr) return std::nullopt;
  auto user = sudo_user_from(std::to_string(entry->pw_uid).c_str(), std::to_string(entry->pw_gid).c_str());
  if (!user || !*user) return std::nullopt;
  return **user;
}

TEST(SudoUser, FromWhatSudoSets) {
  XREF_REQUIRE(geteuid() == 0, "root: only root acts for a sudo user");
  const passwd* entry = getpwnam("nobody");
  ASSERT_NE(entry, nullptr) << "no user nobody";
  const std::string uid = std::to_string(entry->pw_uid), gid = std::to_string(entry->pw_gid);
  auto user = sudo_user_from(uid.c_str(), gid.c_str());
  ASSERT_TRUE(user && *user);
  EXPECT_EQ((*user)->uid, entry->pw_uid);
  EXPECT_EQ((*user)->gid, entry->pw_gid);
  // The groups a login would give: getgrouplist's, with the primary group.
  int count = 0;
  getgrouplist(entry->pw_name, entry->pw_gid, nullptr, &count);
  std::vector<gid_t> expected(static_cast<size_t>(count));
  getgrouplist(entry->pw_name, entry->pw_gid, expected.data(), &count);
  EXPECT_EQ((*user)->groups, expected);

  // Without SUDO_GID, the passwd group.
  auto from_passwd = sudo_user_from(uid.c_str(), nullptr);
  ASSERT_TRUE(from_passwd && *from_passwd);
  EXPECT_EQ((*from_passwd)->gid, entry->pw_gid);

  EXPECT_FALSE(*sudo_user_from(nullptr, nullptr)) << "not under sudo";
  EXPECT_FALSE(*sudo_user_from("", gid.c_str()));
  EXPECT_FALSE(*sudo_user_from("0", "0")) << "sudo by root: root's rights";
  for (const auto& [sudo_uid, sudo_gid] : {std::pair{"10x0", "0"}, std::pair{"65534", "-1"}}) {
    auto bad = sudo_user_from(sudo_uid, sudo_gid);
    ASSERT_FALSE(bad) << sudo_uid << " " << sudo_gid;
    EXPECT_EQ(bad.error().code, ErrorCode::permission_denied);
  }
  uid_t unknown = 3999999;
  while (getpwuid(unknown) != nullptr) ++unknown;
  auto no_group = sudo_user_from(std::to_string(unknown).c_str(), nullptr);
  ASSERT_FALSE(no_group) << "a uid without passwd entry needs SUDO_GID";
  EXPECT_EQ(no_group.error().code, ErrorCode::permission_denied);
}

TEST(UserFiles, OutsideSudoFilesOpenDirectly) {
  auto passwd_file = open_user_file("/etc/passwd", O_RDONLY);
  ASSERT_TRUE(passwd_file) << passwd_file.error().message;
  EXPECT_TRUE(fcntl(passwd_file->get(), F_GETFD) & FD_CLOEXEC);
  auto missing = open_user_file("/nonexistent/file", O_RDONLY);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
  EXPECT_EQ(missing.error().message, "/nonexistent/file: No such file or directory");
  auto nothing = stat_user_file("/nonexistent/file");
  ASSERT_TRUE(nothing);
  EXPECT_FALSE(*nothing);
  auto found = stat_user_file("/etc/passwd");
  ASSERT_TRUE(found && *found);
  struct stat expected {};
  ASSERT_EQ(stat("/etc/passwd", &expected), 0);
  EXPECT_EQ((*found)->st_ino, expected.st_ino);
}

// Everything the child checks, as lines of failures (empty: all held).
std::string check_opener_as(const SudoUser& user, const std::string& scratch) {
  std::ostringstream failures;
  auto expect = [&failures](bool held, const std::string& what) {
    if (!held) failures << what << "\n";
  };
  auto denied = [](const Result<UniqueFd>& opened) {
    return !opened && opened.error().code == ErrorCode::permission_denied;
  };
  if (auto started = act_for_sudo_user(user); !started) return "act_for_sudo_user: " + started.error().message;
  expect(acting_sudo_user() && acting_sudo_user()->uid == user.uid, "acting_sudo_user is the user");

  expect(denied(open_user_file("/etc/shadow", O_RDONLY)), "/etc/shadow refused");
  // Not even a capability is left: /proc/1/environ is root's, readable with
  // CAP_SYS_PTRACE, which per-thread fsuid tricks would keep.
  expect(denied(open_user_file("/proc/1/environ", O_RDONLY)), "/proc/1/environ refused");
  auto passwd_file = open_user_file("/etc/passwd", O_RDONLY);
  char first[5] = {};
  expect(passwd_file && read(passwd_file->get(), first, 5) == 5 && std::string(first, 5) == "root:",
         "/etc/passwd read");
  expect(passwd_file && !(fcntl(passwd_file->get(), F_GETFL) & O_NONBLOCK), "O_NONBLOCK taken off again");
  expect(passwd_file && (fcntl(passwd_file->get(), F_GETFD) & FD_CLOEXEC), "close-on-exec");

  // Under /root, a file that exists and one that does not fail alike.
  const std::string hidden = "/root/xref-user-files-" + std::to_string(getpid());
  auto absent = open_user_file(hidden, O_RDONLY);
  auto absent_stat = stat_user_file(hidden);
  std::ofstream(hidden) << "secret\n";
  auto present = open_user_file(hidden, O_RDONLY);
  auto present_stat = stat_user_file(hidden);
  std::filesystem::remove(hidden);
  expect(denied(absent) && denied(present), "/root files refused");
  expect(!absent && !present && absent.error().message == present.error().message &&
             absent.error().hint == present.error().hint,
         "the same error whether the file exists or not");
  expect(!absent_stat && !present_stat && absent_stat.error().message == present_stat.error().message,
         "stat: the same error whether the file exists or not");

  // Created files are the user's; a FIFO without writer does not block.
  auto created = open_user_file(scratch + "/created", O_WRONLY | O_CREAT, 0644);
  struct stat status {};
  expect(created && fstat(created->get(), &status) == 0 && status.st_uid == user.uid && status.st_gid == user.gid,
         "a created file belongs to the user");
  const std::string fifo = scratch + "/fifo";
  mkfifo(fifo.c_str(), 0644);
  const auto before = std::chrono::steady_clock::now();
  auto pipe_end = open_user_file(fifo, O_RDONLY);
  expect(pipe_end && std::chrono::steady_clock::now() - before < std::chrono::seconds(2), "a FIFO opens at once");

  // Sessions in serve open files from several threads at once.
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&opened] {
      for (int j = 0; j < 50; ++j) opened += open_user_file("/etc/passwd", O_RDONLY).ok();
    });
  }
  for (auto& thread : threads) thread.join();
  expect(opened == 400, "400 opens from 8 threads, got " + std::to_string(opened.load()));
  return failures.str();
}

TEST(UserFiles, UnderSudoFilesOpenWithTheUsersRightsOnly) {
  XREF_REQUIRE(geteuid() == 0, "root: only root acts for a sudo user");
  const auto user = nobody();
  ASSERT_TRUE(user) << "no user nobody";
  char name[] = "/tmp/xref-user-files-XXXXXX";
  const std::string scratch = mkdtemp(name);
  ASSERT_EQ(chown(scratch.c_str(), user->uid, user->gid), 0);
  EXPECT_EXIT(
      {
        const std::string failures = check_opener_as(*user, scratch);
        std::cerr << failures;
        std::exit(failures.empty() ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
  std::filesystem::remove_all(scratch);
}

}  // namespace
}  // namespace xref
