/* drain_target: the workload bench/run_drain.sh traces to measure the event
   path (ring buffer -> windows -> output) at the rate the target makes
   events, not at the rate of one probe hit.

     drain_target --threads N [--seconds S]

   Starts N threads, prints "ready PID" and "threads N", and blocks until it
   reads one byte on stdin (the go byte; a tracer attaches first). Then each
   thread loops as fast as it can: handle_request(i), which calls
   validate(i) once, so under `xref trace --start handle_request --functions
   validate` each call is one window of 4 events (the entry and the return of
   each function). The loop stops at the first of: a second byte or EOF on
   stdin, or S seconds after the go byte. Then it prints its ground truth:

     loop_ns X            (go byte to the stop, CLOCK_MONOTONIC)
     calls_total X        (handle_request calls that returned, all threads)
     thread K calls X     (per thread)

   and, unless the stop was EOF, waits for EOF before it exits, so a tracer
   can detach from a live process. EOF before the go byte prints
   "calls_total 0" and exits: the target was never started (the idle runs).

   Built the way users build (-O2, PIE, no frame-pointer or sibling-call
   flags); noipa keeps the two functions real: no inlining, no clones, and
   handle_request does work after validate returns, so the call stays a
   call, not a tail jump. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))
#define MAX_THREADS 256

PROBED uint64_t validate(uint64_t id) {
  return (id * UINT64_C(0x9e3779b97f4a7c15)) ^ (id >> 7);
}

PROBED uint64_t handle_request(uint64_t id) {
  const uint64_t checked = validate(id);
  return checked ^ (id << 3); /* after the call: no tail jump */
}

struct worker {
  pthread_t thread;
  unsigned index;
  uint64_t calls;
  uint64_t checksum;
  char pad[64];
};

static struct worker workers[MAX_THREADS];
static pthread_barrier_t start_line;
static atomic_int stop_flag;
static atomic_int started;

static void* work(void* arg) {
  struct worker* self = arg;
  pthread_barrier_wait(&start_line);
  if (!atomic_load(&started)) return NULL; /* EOF before the go byte */
  uint64_t calls = 0, sum = 0;
  uint64_t id = (uint64_t)self->index << 40;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    sum += handle_request(id++);
    ++calls;
  }
  self->calls = calls;
  self->checksum = sum;
  return NULL;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr, "usage: drain_target --threads N [--seconds S]\n");
  return 2;
}

/* One byte from stdin: 1, 0 at EOF, -1 on an error. */
static int read_byte(void) {
  char byte;
  for (;;) {
    const ssize_t got = read(STDIN_FILENO, &byte, 1);
    if (got >= 0) return (int)got;
    if (errno != EINTR) return -1;
  }
}

int main(int argc, char** argv) {
  unsigned threads = 0;
  double seconds = 0;
  for (int i = 1; i < argc; ++i) {
    char* end = NULL;
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      const unsigned long value = strtoul(argv[++i], &end, 10);
      if (*end != '\0' || value == 0 || value > MAX_THREADS) return usage();
      threads = (unsigned)value;
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = strtod(argv[++i], &end);
      if (*end != '\0' || !(seconds > 0)) return usage();
    } else {
      return usage();
    }
  }
  if (threads == 0) return usage();

  pthread_barrier_init(&start_line, NULL, threads + 1);
  for (unsigned k = 0; k < threads; ++k) {
    workers[k].index = k;
    if (pthread_create(&workers[k].thread, NULL, work, &workers[k]) != 0) {
      perror("drain_target: pthread_create");
      return 1;
    }
  }
  printf("ready %d\nthreads %u\n", (int)getpid(), threads);
  fflush(stdout);

  const int go = read_byte();
  if (go <= 0) {
    pthread_barrier_wait(&start_line); /* started stays 0: the threads return */
    for (unsigned k = 0; k < threads; ++k) pthread_join(workers[k].thread, NULL);
    printf("loop_ns 0\ncalls_total 0\n");
    return go < 0 ? 1 : 0;
  }
  atomic_store(&started, 1);
  const uint64_t begin = now_ns();
  pthread_barrier_wait(&start_line);

  /* Until a byte, EOF, or the deadline. */
  int eof = 0;
  for (;;) {
    int timeout = -1;
    if (seconds > 0) {
      const double left_ms = seconds * 1e3 - (double)(now_ns() - begin) / 1e6;
      if (left_ms <= 0) break;
      timeout = (int)left_ms + 1;
    }
    struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
    const int ready = poll(&in, 1, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      perror("drain_target: poll");
      return 1;
    }
    if (ready > 0) {
      eof = read_byte() <= 0;
      break;
    }
  }
  atomic_store(&stop_flag, 1);
  const uint64_t stopped = now_ns();
  uint64_t total = 0, checksum = 0;
  for (unsigned k = 0; k < threads; ++k) {
    pthread_join(workers[k].thread, NULL);
    total += workers[k].calls;
    checksum ^= workers[k].checksum;
  }
  printf("loop_ns %" PRIu64 "\n", stopped - begin);
  for (unsigned k = 0; k < threads; ++k) printf("thread %u calls %" PRIu64 "\n", k, workers[k].calls);
  printf("checksum %" PRIx64 "\ncalls_total %" PRIu64 "\n", checksum, total);
  fflush(stdout);
  while (!eof) eof = read_byte() <= 0;
  return 0;
}
