// settle_frames: what a debugger's stop tells about a window's frames, with
// the same rules as the BPF program's pop_frames.
#include "trace/stopped_threads.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace xref {
namespace {

xref_thread_window window_with(std::initializer_list<xref_frame> frames) {
  xref_thread_window window;
  std::memset(&window, 0, sizeof window);
  window.window_id = 7;
  window.seq = 5;
  for (const xref_frame& frame : frames) window.frames[window.depth++] = frame;
  return window;
}

TEST(SettleFrames, NothingBelowTheStoppedThreadsSpMeansNothingChanges) {
  xref_thread_window window = window_with({{0x1000, 0, XREF_FRAME_F_BY_RET, 0}, {0x0f00, 1, XREF_FRAME_F_BY_RET, 0}});
  const SettledFrames settled = settle_frames(window, 42, 0x0e00, 99);
  EXPECT_TRUE(settled.records.empty());
  EXPECT_FALSE(settled.closed);
  EXPECT_EQ(window.depth, 2u);
  EXPECT_EQ(window.seq, 5u);
}

// longjmp back past the window's frames: unwound, then the window ends.
TEST(SettleFrames, FramesBelowAreUnwoundAndTheStartFrameEndsTheWindow) {
  xref_thread_window window = window_with({{0x1000, 0, XREF_FRAME_F_BY_RET, 0}, {0x0f00, 1, 0, 0}});
  const SettledFrames settled = settle_frames(window, 42, 0x1010, 99);
  ASSERT_EQ(settled.records.size(), 3u);
  EXPECT_EQ(settled.records[0].type, XREF_EVENT_UNWOUND);
  EXPECT_EQ(settled.records[0].function_id, 1u);
  EXPECT_EQ(settled.records[0].depth, 1u);
  EXPECT_EQ(settled.records[0].seq, 5u);
  EXPECT_EQ(settled.records[1].type, XREF_EVENT_UNWOUND);
  EXPECT_EQ(settled.records[1].depth, 0u);
  EXPECT_EQ(settled.records[2].type, XREF_EVENT_WINDOW_END);
  EXPECT_EQ(settled.records[2].status, XREF_WINDOW_UNWOUND);
  EXPECT_EQ(settled.records[2].seq, 7u);
  EXPECT_EQ(settled.records[2].window_id, 7u);
  EXPECT_EQ(settled.records[2].tid, 42u);
  EXPECT_TRUE(settled.closed);
}

// A start frame handed by tail jumps to code no probe follows (its last
// shown function's return is inferred): complete, not unwound.
TEST(SettleFrames, ATailedStartFrameEndsCompleteWithItsReturnInferred) {
  xref_thread_window window =
      window_with({{0x1000, 3, XREF_FRAME_F_TAILED | XREF_FRAME_F_NAMED, 0}, {0x0f00, 4, XREF_FRAME_F_BY_RET, 0}});
  const SettledFrames settled = settle_frames(window, 42, 0x1008, 99);
  ASSERT_EQ(settled.records.size(), 3u);
  EXPECT_EQ(settled.records[0].type, XREF_EVENT_UNWOUND);
  EXPECT_EQ(settled.records[1].type, XREF_EVENT_RETURN);
  EXPECT_EQ(settled.records[1].function_id, 3u);
  EXPECT_EQ(settled.records[1].flags, XREF_EVENT_F_INFERRED);
  EXPECT_EQ(settled.records[2].status, XREF_WINDOW_COMPLETE);
  EXPECT_EQ(settled.records[2].flags, XREF_EVENT_F_INFERRED);
  EXPECT_EQ(settled.records[2].function_id, 3u);
}

TEST(SettleFrames, OnlyFramesBelowTheSpEnd) {
  xref_thread_window window = window_with({{0x1000, 0, XREF_FRAME_F_BY_RET, 0}, {0x0f00, 1, XREF_FRAME_F_BY_RET, 0}});
  const SettledFrames settled = settle_frames(window, 42, 0x0f80, 99);
  ASSERT_EQ(settled.records.size(), 1u);
  EXPECT_FALSE(settled.closed);
  EXPECT_EQ(window.depth, 1u);
  EXPECT_EQ(window.seq, 6u);
}

// This test's own thread runs: it is in no ptrace stop, so it has no sp to give.
TEST(StoppedThreadSp, ARunningThreadHasNone) {
  EXPECT_FALSE(stopped_thread_sp(getpid(), static_cast<uint32_t>(gettid())).has_value());
  EXPECT_FALSE(stopped_thread_sp(getpid(), 0x7fffffff).has_value());
}

// A ptrace-stopped thread (as under a debugger): its sp is the one
// PTRACE_GETREGS reads.
TEST(StoppedThreadSp, APtraceStoppedThreadGivesItsSp) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  ASSERT_EQ(ptrace(PTRACE_ATTACH, child, nullptr, nullptr), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  user_regs_struct regs{};
  ASSERT_EQ(ptrace(PTRACE_GETREGS, child, nullptr, &regs), 0);
  const auto sp = stopped_thread_sp(child, static_cast<uint32_t>(child));
  ptrace(PTRACE_DETACH, child, nullptr, nullptr);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(sp.has_value());
  EXPECT_EQ(*sp, regs.rsp);
}

}  // namespace
}  // namespace xref
