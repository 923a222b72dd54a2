/* signal_target: a program that uses SIGRTMAX-1 itself, the signal xref's
 * --stop-when stops a thread with (shared/probe_abi.h). It installs an
 * SA_SIGINFO handler for it, then N times calls signal_work(i) (the function
 * a probe session watches) and sends itself the signal, in turn with
 * sigqueue (SI_QUEUE, a payload), kill (SI_USER) and tgkill (SI_TKILL).
 * The handler checks each signal's si_code, sender and payload against what
 * was sent, and the program records the outcome on its last line:
 *   signal_target: handled H of N signals as sent (W wrong, M missing)
 * It exits 0 only when all N arrived as sent, 3 otherwise.
 *
 * usage: signal_target [--signals N]   (default 30)
 *
 * Built by gcc and clang at -O2 (tests/targets/CMakeLists.txt). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAYLOAD_BASE 0x5100

enum how { BY_SIGQUEUE, BY_KILL, BY_TGKILL, HOW_COUNT };

static volatile sig_atomic_t expected_index = -1;
static volatile sig_atomic_t handled_right = 0;
static volatile sig_atomic_t handled_wrong = 0;
static pid_t self_pid;
static uid_t self_uid;

static enum how how_of(int index) { return (enum how)(index % HOW_COUNT); }

static int expected_code(enum how how) {
  switch (how) {
    case BY_SIGQUEUE: return SI_QUEUE;
    case BY_KILL: return SI_USER;
    default: return SI_TKILL;
  }
}

static void on_signal(int signo, siginfo_t *info, void *context) {
  (void)context;
  const int index = expected_index;
  int right = index >= 0 && signo == SIGRTMAX - 1 && info->si_signo == signo &&
              info->si_code == expected_code(how_of(index)) && info->si_pid == self_pid && info->si_uid == self_uid;
  if (right && how_of(index) == BY_SIGQUEUE) right = info->si_value.sival_int == PAYLOAD_BASE + index;
  if (right) {
    handled_right = handled_right + 1;
  } else {
    handled_wrong = handled_wrong + 1;
  }
  expected_index = -1;
}

/* The function a probe session watches: one call per signal sent. */
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noinline, noclone))
#endif
unsigned long signal_work(unsigned long index) {
  static volatile unsigned long sink;
  sink = sink + index * 3 + 1;
  return sink;
}

static int send_signal(int index) {
  const int signo = SIGRTMAX - 1;
  expected_index = index;
  switch (how_of(index)) {
    case BY_SIGQUEUE: {
      union sigval value;
      value.sival_int = PAYLOAD_BASE + index;
      return sigqueue(self_pid, signo, value);
    }
    case BY_KILL: return kill(self_pid, signo);
    default: return (int)syscall(SYS_tgkill, self_pid, (pid_t)syscall(SYS_gettid), signo);
  }
}

int main(int argc, char **argv) {
  long count = 30;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--signals") == 0 && i + 1 < argc) {
      count = strtol(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: %s [--signals N]\n", argv[0]);
      return 2;
    }
  }
  self_pid = getpid();
  self_uid = getuid();
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGRTMAX - 1, &action, NULL) != 0) {
    perror("sigaction");
    return 2;
  }
  long missing = 0;
  for (long i = 0; i < count; ++i) {
    signal_work((unsigned long)i);
    const sig_atomic_t before = handled_right + handled_wrong;
    if (send_signal((int)i) != 0) {
      perror("sending SIGRTMAX-1");
      return 2;
    }
    /* A signal a thread sends itself, unblocked, is handled before the
     * call returns: one that was not has been taken away. */
    if (handled_right + handled_wrong == before) ++missing;
  }
  printf("signal_target: handled %d of %ld signals as sent (%d wrong, %ld missing)\n", (int)handled_right, count,
         (int)handled_wrong, missing);
  return handled_right == count && handled_wrong == 0 && missing == 0 ? 0 : 3;
}
