#include "process_identity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "command_output.h"

namespace xref {
namespace {

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto parsed = parse_proc_stat(text);
  return parsed ? parsed->state : '?';
}

template <typename Predicate>
bool eventually(Predicate predicate) {
  for (int i = 0; i < 500; ++i) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(ProcessIdentity, ParsesStatWithHostileComm) {
  auto stat = parse_proc_stat("42 (a) b (c)) S 1 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 100 200");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "a) b (c)");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->flags, 4194560u);
  EXPECT_EQ(stat->starttime_ticks, 987654u);
  EXPECT_FALSE(parse_proc_stat("42 (x) S 1 2"));
}

TEST(ProcessIdentity, SelfIdentityMatchesSha256sum) {
  auto self = ProcessHandle::open(getpid());
  ASSERT_TRUE(self) << self.error().message;
  const std::string expected = test::command_output("sha256sum /proc/" + std::to_string(getpid()) + "/exe").substr(0, 64);
  EXPECT_EQ(self->identity().exe_sha256, expected);
  EXPECT_GT(self->identity().starttime_ticks, 0u);
  EXPECT_FALSE(self->identity().build_id.empty());
  EXPECT_TRUE(self->recheck().ok());
}

TEST(ProcessIdentity, RefusesMissingZombieAndKernelThreads) {
  const pid_t reaped = fork();
  if (reaped == 0) _exit(0);
  waitpid(reaped, nullptr, 0);
  auto missing = ProcessHandle::open(reaped);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::no_such_process);

  const pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  ASSERT_TRUE(eventually([&] { return process_state(zombie) == 'Z'; }));
  auto zombie_handle = ProcessHandle::open(zombie);
  ASSERT_FALSE(zombie_handle);
  EXPECT_EQ(zombie_handle.error().code, ErrorCode::not_a_user_process);
  waitpid(zombie, nullptr, 0);

  auto kthreadd = ProcessHandle::open(2);
  ASSERT_FALSE(kthreadd);
  EXPECT_EQ(kthreadd.error().code, ErrorCode::not_a_user_process);

  auto invalid = ProcessHandle::open(-5);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, ErrorCode::invalid_argument);
}

TEST(ProcessIdentity, AThreadIdNamesItsProcess) {
  std::promise<pid_t> tid;
  std::promise<void> done;
  std::thread thread([&] {
    tid.set_value(gettid());
    done.get_future().wait();
  });
  const pid_t thread_id = tid.get_future().get();
  auto handle = ProcessHandle::open(thread_id);
  done.set_value();
  thread.join();
  ASSERT_FALSE(handle);
  EXPECT_EQ(handle.error().code, ErrorCode::pid_is_thread);
  EXPECT_EQ(error_exit_status(ErrorCode::pid_is_thread), 17);
  EXPECT_EQ(handle.error().message, std::to_string(thread_id) + " is a thread ID: the thread belongs to process " +
                                        std::to_string(getpid()));
  EXPECT_EQ(handle.error().hint, "pass the process's PID, " + std::to_string(getpid()));
}

TEST(ProcessIdentity, RecheckSeesExitAndExec) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  if (child == 0) {
    char byte;
    close(go[1]);
    if (read(go[0], &byte, 1) == 1) execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(1);
  }
  close(go[0]);
  auto handle = ProcessHandle::open(child);
  ASSERT_TRUE(handle) << handle.error().message;
  EXPECT_TRUE(handle->recheck().ok());

  // exec keeps the PID and the start time; the executable changes.
  ASSERT_EQ(write(go[1], "x", 1), 1);
  close(go[1]);
  ASSERT_TRUE(eventually([&] { return !handle->recheck().ok(); }));
  EXPECT_EQ(handle->recheck().error().code, ErrorCode::process_changed);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto after_exit = handle->recheck();
  ASSERT_FALSE(after_exit);
  EXPECT_EQ(after_exit.error().code, ErrorCode::process_exited);
  EXPECT_FALSE(handle->alive());
}

}  // namespace
}  // namespace xref
