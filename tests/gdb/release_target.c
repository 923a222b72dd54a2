/* The target of the breakpoint-release tests (tests/gdb/breakpoint_release_test.py,
   tests/lldb/breakpoint_release_test.py): built by the test with gcc and
   clang at -O2, default flags, as users build. It calls tally() CALLS times,
   one call every INTERVAL_US, and records each call (its number) in RECORD
   before it returns; settle() runs after each call, a place for a debugger to
   stop between calls. A SIGTRAP from a stray int3 kills it (exit 133).

   release_target RECORD CALLS INTERVAL_US */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int record_fd = -1;

__attribute__((noinline)) long tally(long call) {
  char line[32];
  const int length = snprintf(line, sizeof line, "tally %ld\n", call);
  if (write(record_fd, line, (size_t)length) != length) exit(3);
  return call * 3 + 1;
}

__attribute__((noinline)) void settle(long call, long value) {
  static volatile long sink;
  sink = call + value;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: release_target RECORD CALLS INTERVAL_US\n");
    return 2;
  }
  record_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (record_fd < 0) return 2;
  const long calls = atol(argv[2]);
  const long interval_us = atol(argv[3]);
  for (long call = 1; call <= calls; ++call) {
    const long value = tally(call);
    settle(call, value);
    const struct timespec pause = {interval_us / 1000000, (interval_us % 1000000) * 1000};
    nanosleep(&pause, NULL);
  }
  return 0;
}
