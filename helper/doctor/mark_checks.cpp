// doctor's mark_write_clock check: whether --mark-file can time log lines
// exactly here. The write clock is started for real, a temporary file is
// watched and written once, and the write must come back with a time
// between the moments before and after it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "doctor/checks.h"
#include "mark/write_clock.h"
#include "monotonic_clock.h"

namespace xref {

void check_mark_write_clock(DoctorReport& report) {
  const char* const name = "mark_write_clock";
  auto clock = MarkWriteClock::start();
  if (!clock) {
    report.checks.push_back({name, CheckStatus::missing, clock.error().message,
                             "--mark-file still works; a mark read after its window opened is shown uncertain"});
    return;
  }
  char path[] = "/tmp/xref-doctor-mark-XXXXXX";
  const int fd = mkstemp(path);
  struct stat status {};
  if (fd < 0 || fstat(fd, &status) != 0) {
    if (fd >= 0) close(fd);
    report.checks.push_back({name, CheckStatus::failed, "cannot make a test file in /tmp", ""});
    return;
  }
  (*clock)->watch(status.st_dev, status.st_ino);
  const uint64_t before = monotonic_ns();
  const bool written = write(fd, "mark\n", 5) == 5;
  const uint64_t after = monotonic_ns();
  close(fd);
  unlink(path);
  (*clock)->drain();
  const auto timed = (*clock)->written_at(status.st_dev, status.st_ino, 4);
  if (!written || !timed || *timed < before || *timed > after) {
    report.checks.push_back({name, CheckStatus::failed,
                             "the write clock loaded, but a write to a watched test file was not timed",
                             "--mark-file falls back to poll bounds; report this with the kernel version"});
    return;
  }
  report.checks.push_back({name, CheckStatus::ok,
                           "a write to a watched test file was timed (raw syscall tracepoints): --mark-file marks "
                           "are exact",
                           ""});
}

}  // namespace xref
