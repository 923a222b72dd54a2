/* capture_spin: a CPU-bound target for the capture tests of `xref profile`
 * (tests/e2e/profile): fixed call chains whose functions the tests find
 * with nm and expect in every stack the capture unwinds.
 *
 *   main thread:  main -> spin_top -> spin_middle -> spin_leaf_main
 *   workers:      start_thread -> spin_worker -> spin_middle_worker -> spin_leaf_worker
 *   sorter:       start_thread -> spin_sorter -> qsort (libc) -> ... -> spin_compare
 *
 * Built as users build (-O2, no frame pointers) by gcc and clang, and with
 * -fno-omit-frame-pointer for --callers fp. Options: --workers N,
 * --late-thread-ms N (one more worker started N ms after "ready"),
 * --exit-after-ms N (exit then), --exec-after-ms N (exec /bin/sleep 30 then). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long spin_sink;

__attribute__((noinline)) void spin_leaf_main(void) {
  for (unsigned i = 0; i < 200000; i++) spin_sink += i * 7u;
}
__attribute__((noinline)) void spin_middle(void) {
  spin_leaf_main();
  spin_sink++;
}
__attribute__((noinline)) void spin_top(void) {
  spin_middle();
  spin_sink++;
}

__attribute__((noinline)) void spin_leaf_worker(void) {
  for (unsigned i = 0; i < 200000; i++) spin_sink ^= i + 3u;
}
__attribute__((noinline)) void spin_middle_worker(void) {
  spin_leaf_worker();
  spin_sink++;
}
__attribute__((noinline)) void *spin_worker(void *arg) {
  (void)arg;
  for (;;) spin_middle_worker();
  return NULL;
}

/* Called by libc's qsort: its callers are libc frames without frame pointers. */
__attribute__((noinline)) int spin_compare(const void *a, const void *b) {
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  for (unsigned i = 0; i < 200; i++) spin_sink += i;
  return x < y ? -1 : x > y;
}
__attribute__((noinline)) void *spin_sorter(void *arg) {
  (void)arg;
  static unsigned values[4096];
  for (;;) {
    for (unsigned i = 0; i < 4096; i++) values[i] = (i * 2654435761u) >> 7;
    qsort(values, 4096, sizeof values[0], spin_compare);
  }
  return NULL;
}

static long option(int argc, char **argv, const char *name, long fallback) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return strtol(argv[i + 1], NULL, 10);
  }
  return fallback;
}

static long now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  const long workers = option(argc, argv, "--workers", 1);
  const long late_ms = option(argc, argv, "--late-thread-ms", -1);
  const long exit_ms = option(argc, argv, "--exit-after-ms", -1);
  const long exec_ms = option(argc, argv, "--exec-after-ms", -1);
  pthread_t thread;
  for (long i = 0; i < workers; i++) pthread_create(&thread, NULL, spin_worker, NULL);
  pthread_create(&thread, NULL, spin_sorter, NULL);
  printf("pid 0x%x\nready\n", (unsigned)getpid());
  fflush(stdout);
  const long start = now_ms();
  int late_started = 0;
  for (;;) {
    spin_top();
    const long elapsed = now_ms() - start;
    if (late_ms >= 0 && !late_started && elapsed >= late_ms) {
      pthread_create(&thread, NULL, spin_worker, NULL);
      late_started = 1;
    }
    if (exit_ms >= 0 && elapsed >= exit_ms) exit(0);
    if (exec_ms >= 0 && elapsed >= exec_ms) {
      /* Another program: the exec changes what the PID runs. */
      char *sleep_argv[] = {"sleep", "30", NULL};
      execv("/bin/sleep", sleep_argv);
      _exit(127);
    }
  }
}
