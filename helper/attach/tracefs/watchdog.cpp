#include "attach/tracefs/watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xref {
namespace {

constexpr char kReleased = 'r';
constexpr int kRetryMs = 10;
constexpr int kRetries = 1000;  // 10 s for a busy instance or event to come free

// What the watchdog needs, made before fork(): from then on it touches
// only this memory and system calls.
struct ChildPlan {
  int wait_fd = -1;    // the pipe's read end: a byte, or EOF when the helper is gone
  int helper_fd = -1;  // a pidfd of the helper (-1 without pidfd_open): readable once it exited
  const char* tracing_on = nullptr;
  const char* instance_directory = nullptr;
  const char* uprobe_events = nullptr;
  const std::string* removals = nullptr;
  size_t removal_count = 0;
  char* removed = nullptr;  // one flag per removal
};

void pause_briefly() {
  const timespec pause{0, kRetryMs * 1000000L};
  nanosleep(&pause, nullptr);
}

void write_file(const char* path, const char* text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, text, strlen(text));
  close(fd);
}

// Every descriptor but stdio (on /dev/null) and the two it waits on.
void close_inherited(int keep_low, int keep_high) {
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    if (null > 2) close(null);
  }
  if (keep_low > keep_high) std::swap(keep_low, keep_high);
  if (keep_low < 0) keep_low = keep_high;
  if (keep_low > 3) close_range(3, static_cast<unsigned>(keep_low) - 1, 0);
  if (keep_high > keep_low + 1) close_range(static_cast<unsigned>(keep_low) + 1, static_cast<unsigned>(keep_high) - 1, 0);
  close_range(static_cast<unsigned>(keep_high) + 1, ~0U, 0);
}

void detach_from_helper() {
  setsid();  // out of the helper's process group: Ctrl-C, timeout(1), kill -- -PGID miss it
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2}) {
    sigaction(signal_number, &ignore, nullptr);
  }
  prctl(PR_SET_NAME, "xref-watchdog", 0, 0, 0);
  // The helper's memory is shared with it until written: its RSS looks
  // like the helper's, and it must never be the one the OOM killer takes.
  write_file("/proc/self/oom_score_adj", "-1000");
}

// True when the helper released it; false once the helper is gone.
bool wait_for_helper(const ChildPlan& plan) {
  fcntl(plan.wait_fd, F_SETFL, O_NONBLOCK);
  for (;;) {
    pollfd watched[2] = {{plan.wait_fd, POLLIN, 0}, {plan.helper_fd, POLLIN, 0}};
    const int ready = poll(watched, plan.helper_fd >= 0 ? 2 : 1, -1);
    if (ready < 0 && errno != EINTR) pause_briefly();
    char byte = 0;
    const ssize_t got = read(plan.wait_fd, &byte, 1);
    if (got == 1) return byte == kReleased;
    if (got == 0) return false;  // no write end left: the helper exited, however
    if (plan.helper_fd >= 0 && (watched[1].revents & POLLIN)) return false;
  }
}

void remove_trace(const ChildPlan& plan) {
  // Removing the instance disables its events, which takes the int3 out of
  // the target; the helper's readers of it were closed when it died.
  write_file(plan.tracing_on, "0");
  for (int attempt = 0; attempt < kRetries; ++attempt) {
    if (rmdir(plan.instance_directory) == 0 || errno != EBUSY) break;
    pause_briefly();
  }
  const int events = open(plan.uprobe_events, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (events < 0) return;
  for (int attempt = 0; attempt < kRetries; ++attempt) {
    bool busy = false;
    for (size_t index = 0; index < plan.removal_count; ++index) {
      if (plan.removed[index]) continue;
      const std::string& removal = plan.removals[index];
      // ENOENT: never defined, or already removed.
      if (write(events, removal.data(), removal.size()) >= 0 || errno != EBUSY) {
        plan.removed[index] = 1;
      } else {
        busy = true;
      }
    }
    if (!busy) break;
    pause_briefly();
  }
  close(events);
}

[[noreturn]] void watch(const ChildPlan& plan) {
  close_inherited(plan.wait_fd, plan.helper_fd);
  detach_from_helper();
  if (!wait_for_helper(plan)) remove_trace(plan);
  _exit(0);
}

// Descriptors the child keeps must not be 0-2, which it points at /dev/null.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

}  // namespace

Result<TracefsWatchdog> TracefsWatchdog::start(TracefsWatchdogPlan plan) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return make_error(ErrorCode::internal, std::string("cannot start the tracefs watchdog: pipe: ") + strerror(errno));
  }
  const int wait_fd = above_stdio(pipe_fds[0]);
  const int release_fd = above_stdio(pipe_fds[1]);
  const int helper_fd = above_stdio(static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0)));
  const std::string tracing_on = plan.instance_directory + "/tracing_on";
  std::vector<char> removed(plan.event_removals.size(), 0);
  const ChildPlan child_plan{wait_fd,
                             helper_fd,
                             tracing_on.c_str(),
                             plan.instance_directory.c_str(),
                             plan.uprobe_events.c_str(),
                             plan.event_removals.data(),
                             plan.event_removals.size(),
                             removed.data()};
  const pid_t child = wait_fd < 0 || release_fd < 0 ? -1 : fork();
  if (child == 0) watch(child_plan);
  const int fork_error = errno;
  close(wait_fd);
  if (helper_fd >= 0) close(helper_fd);
  if (child < 0) {
    close(release_fd);
    return make_error(ErrorCode::internal,
                      std::string("cannot start the tracefs watchdog: ") + strerror(fork_error),
                      "without it a crash of xref would leave the probes in the target; try again");
  }
  return TracefsWatchdog(child, release_fd);
}

TracefsWatchdog::TracefsWatchdog(TracefsWatchdog&& other) noexcept
    : pid_(other.pid_), release_fd_(other.release_fd_) {
  other.pid_ = -1;
  other.release_fd_ = -1;
}

TracefsWatchdog::~TracefsWatchdog() {
  if (release_fd_ >= 0) let_go();
}

void TracefsWatchdog::release() {
  if (release_fd_ < 0) return;
  const char byte = kReleased;
  (void)!write(release_fd_, &byte, 1);
  let_go();
}

void TracefsWatchdog::let_go() {
  close(release_fd_);
  release_fd_ = -1;
  // Released, it exits at once; still removing, it is left to finish (and
  // to init, once this process exits).
  for (int attempt = 0; attempt < 20; ++attempt) {
    const pid_t waited = waitpid(pid_, nullptr, WNOHANG);
    if (waited != 0) return;
    pause_briefly();
  }
}

}  // namespace xref
