// The output queue over real pipes: in order when the reader reads, never
// blocking the producer when it does not, and counting what it could not
// write.
#include "output/output_queue.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace xref {
namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  std::string read_all() {
    close(write_end);
    write_end = -1;
    std::string text;
    char buffer[65536];
    ssize_t count;
    while ((count = read(read_end, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(count));
    return text;
  }
};

TEST(OutputQueue, WritesEverythingInOrder) {
  Pipe pipe;
  ASSERT_GE(pipe.read_end, 0);
  std::string expected;
  std::thread reader;
  std::string got;
  {
    OutputQueue queue(pipe.write_end, 1 << 20);
    reader = std::thread([&] {
      char buffer[4096];
      ssize_t count;
      while ((count = read(pipe.read_end, buffer, sizeof buffer)) > 0) got.append(buffer, static_cast<size_t>(count));
    });
    for (int i = 0; i < 2000; ++i) {
      std::string line = "line " + std::to_string(i) + " " + std::string(static_cast<size_t>(i % 97), 'x') + "\n";
      expected += line;
      ASSERT_TRUE(queue.push(line, false));
    }
    const OutputTotals totals = queue.finish();
    EXPECT_EQ(totals.pieces_written, 2000u);
    EXPECT_EQ(totals.pieces_unwritten, 0u);
    EXPECT_EQ(totals.pieces_refused, 0u);
  }
  close(pipe.write_end);
  pipe.write_end = -1;
  reader.join();
  EXPECT_EQ(got, expected);
}

// The same order and totals through each way the writer reaches its
// descriptor: a regular file (written directly), a socket (MSG_DONTWAIT),
// and a pipe left blocking by its owner (the queue's own non-blocking
// descriptor for it): the caller's flags are never changed.
std::string lines_for(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += "window " + std::to_string(i) + " " + std::string(static_cast<size_t>(i % 311), 'y') + "\n";
  return text;
}

void push_lines(OutputQueue& queue, int count) {
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(queue.push("window " + std::to_string(i) + " " + std::string(static_cast<size_t>(i % 311), 'y') + "\n",
                           false));
  }
}

TEST(OutputQueue, ARegularFileGetsEverythingInOrder) {
  char path[] = "/tmp/xref-output-queue-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  {
    OutputQueue queue(fd);
    push_lines(queue, 5000);
    const OutputTotals totals = queue.finish();
    EXPECT_EQ(totals.pieces_written, 5000u);
    EXPECT_EQ(totals.pieces_unwritten, 0u);
  }
  std::string got(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  ASSERT_EQ(pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()));
  EXPECT_EQ(got, lines_for(5000));
  close(fd);
}

TEST(OutputQueue, ASocketGetsEverythingInOrder) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    ssize_t count;
    while ((count = read(fds[1], buffer, sizeof buffer)) > 0) got.append(buffer, static_cast<size_t>(count));
  });
  {
    OutputQueue queue(fds[0]);
    push_lines(queue, 5000);
    const OutputTotals totals = queue.finish();
    EXPECT_EQ(totals.pieces_written, 5000u);
    EXPECT_FALSE(totals.broken);
  }
  shutdown(fds[0], SHUT_WR);
  reader.join();
  EXPECT_EQ(got, lines_for(5000));
  close(fds[0]);
  close(fds[1]);
}

TEST(OutputQueue, APipesOwnFlagsStayAsTheyWere) {
  Pipe pipe;
  const int flags_before = fcntl(pipe.write_end, F_GETFL);
  ASSERT_EQ(flags_before & O_NONBLOCK, 0);
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    ssize_t count;
    while ((count = read(pipe.read_end, buffer, sizeof buffer)) > 0) got.append(buffer, static_cast<size_t>(count));
  });
  {
    OutputQueue queue(pipe.write_end);
    push_lines(queue, 5000);
    EXPECT_EQ(queue.finish().pieces_written, 5000u);
    EXPECT_EQ(fcntl(pipe.write_end, F_GETFL), flags_before) << "the caller's descriptor is left blocking";
  }
  close(pipe.write_end);
  pipe.write_end = -1;
  reader.join();
  EXPECT_EQ(got, lines_for(5000));
}

// Nobody reads: the producer is never held up; past the budget droppable
// pieces are refused, essential ones still go in; a cancel ends the wait
// and what was left is counted.
TEST(OutputQueue, AStalledReaderCostsOutputNotTime) {
  Pipe pipe;
  const int cancel = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(cancel, 0);
  OutputQueue queue(pipe.write_end, 256 * 1024);
  const std::string piece(64 * 1024, 'w');
  size_t accepted = 0, refused = 0;
  for (int i = 0; i < 64; ++i) (queue.push(piece, true) ? accepted : refused) += 1;
  EXPECT_GT(refused, 0u) << "4 MiB into a stalled pipe and a 256 KiB budget";
  EXPECT_TRUE(queue.push("summary\n", false)) << "essential pieces always go in";
  const uint64_t one = 1;
  ASSERT_EQ(write(cancel, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  const OutputTotals totals = queue.finish(cancel);
  EXPECT_EQ(totals.pieces_refused, refused);
  EXPECT_EQ(totals.pieces_written + totals.pieces_unwritten, accepted + 1);
  EXPECT_GT(totals.pieces_unwritten, 0u);
  EXPECT_FALSE(queue.push("late\n", false)) << "nothing is queued after finish";
  close(cancel);
}

// A cancel that comes while the reader keeps up (a second SIGINT: `timeout`
// signals the command and then its process group) costs nothing the pipe
// has room for: the queue is stopped at once, yet every piece is written.
TEST(OutputQueue, ACancelWritesWhatThePipeTakesWithoutWaiting) {
  for (int round = 0; round < 200; ++round) {
    Pipe pipe;
    const int cancel = eventfd(0, EFD_CLOEXEC);
    ASSERT_GE(cancel, 0);
    const uint64_t one = 1;
    ASSERT_EQ(write(cancel, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    std::string expected;
    OutputQueue queue(pipe.write_end);
    for (int i = 0; i < 8; ++i) {
      const std::string line = "window " + std::to_string(i) + " " + std::string(300, 'x') + "\n";
      expected += line;
      ASSERT_TRUE(queue.push(line, false));
    }
    const OutputTotals totals = queue.finish(cancel);
    EXPECT_EQ(totals.pieces_written, 8u) << "round " << round;
    EXPECT_EQ(totals.pieces_unwritten, 0u) << "round " << round;
    EXPECT_EQ(pipe.read_all(), expected) << "round " << round;
    close(cancel);
  }
}

// The reader goes away: the queue says so, and refuses what comes next.
TEST(OutputQueue, AReaderThatLeftBreaksIt) {
  signal(SIGPIPE, SIG_IGN);
  Pipe pipe;
  close(pipe.read_end);
  pipe.read_end = -1;
  OutputQueue queue(pipe.write_end);
  queue.push("first\n", false);
  const OutputTotals totals = queue.finish(-1, 5000);
  EXPECT_TRUE(totals.broken);
  EXPECT_TRUE(queue.broken());
  EXPECT_FALSE(queue.push("second\n", false));
}

}  // namespace
}  // namespace xref

namespace xref {
namespace {

// A reader that stops reading: the pipe fills, the writer holds one batch,
// and what comes after waits in the queue. A keyed piece still there is
// replaced in place by a newer one of its key (counted), never by one of
// another key; essential bytes count what waits and must go out.
TEST(OutputQueue, ANewerKeyedPieceReplacesTheUnsentOneInItsPlace) {
  Pipe pipe;
  ASSERT_GE(pipe.read_end, 0);
  OutputQueue queue(pipe.write_end, 1 << 20);
  // More than the pipe holds: the writer is stuck on this batch.
  const std::string filler(256 * 1024, 'f');
  ASSERT_EQ(queue.push_keyed(99, filler + "\n", false), OutputQueue::KeyedPush::queued);
  while (queue.unsent(99)) std::this_thread::yield();  // the writer took it
  ASSERT_TRUE(queue.push("answer 1\n", false));
  EXPECT_FALSE(queue.unsent(7));
  EXPECT_EQ(queue.push_keyed(7, "update 7 a\n", true), OutputQueue::KeyedPush::retry) << "nothing of key 7 to replace";
  EXPECT_EQ(queue.push_keyed(7, "update 7 a\n", false), OutputQueue::KeyedPush::queued);
  EXPECT_EQ(queue.push_keyed(8, "update 8 a\n", false), OutputQueue::KeyedPush::queued);
  ASSERT_TRUE(queue.push("answer 2\n", false));
  ASSERT_TRUE(queue.unsent(7));
  EXPECT_EQ(queue.push_keyed(7, "update 7 b\n", false), OutputQueue::KeyedPush::retry) << "one of key 7 is unsent";
  EXPECT_EQ(queue.push_keyed(7, "update 7 bb\n", true), OutputQueue::KeyedPush::superseded);
  EXPECT_EQ(queue.push_keyed(7, "update 7 c\n", true), OutputQueue::KeyedPush::superseded);
  ASSERT_TRUE(queue.push("window\n", true));
  EXPECT_EQ(queue.essential_bytes(), filler.size() + 1 + std::string("answer 1\nupdate 7 c\nupdate 8 a\nanswer 2\n").size())
      << "the essential pieces not written yet (the stuck one too), not the droppable window";
  EXPECT_EQ(queue.totals().pieces_superseded, 2u);

  std::string got;
  std::thread reader([&] {
    char buffer[65536];
    ssize_t count;
    while ((count = read(pipe.read_end, buffer, sizeof buffer)) > 0) got.append(buffer, static_cast<size_t>(count));
  });
  const OutputTotals totals = queue.finish();
  EXPECT_EQ(totals.pieces_unwritten, 0u);
  EXPECT_EQ(queue.essential_bytes(), 0u);
  close(pipe.write_end);
  pipe.write_end = -1;
  reader.join();
  EXPECT_EQ(got, filler + "\nanswer 1\nupdate 7 c\nupdate 8 a\nanswer 2\nwindow\n");
}

}  // namespace
}  // namespace xref
