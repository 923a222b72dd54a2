/* hw_threads_target: threads that exist before a watch arms and threads
 * created after it, all writing watched words: the ground truth for the hw
 * engine's breakpoints per thread and their inherited copies
 * (tests/unit/watch/hw_engine_test.cpp), on hosts where debug registers do
 * not fire as much as where they do.
 *
 * usage: hw_threads_target [--threads N] [--late N] [--late-busy-ms MS]
 *                          [--go FILE] [--done FILE]
 * Prints `obj words 0xADDR` (four 8-byte words), `pid P`, `ready`; then
 * N threads wait until FILE (--go) exists and write words[0..3] 100 times
 * each; main then starts the --late threads, which write the words until
 * each has run MS milliseconds of CPU time (CLOCK_THREAD_CPUTIME_ID: the
 * time their inherited breakpoints are enabled is at least that), and
 * creates --done's file once every late thread has done so. Every thread
 * then stays until the process is killed (so a test can count the debug
 * registers each one holds). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t words[4] __attribute__((aligned(32)));

static const char* go_file = NULL;
static const char* done_file = NULL;
static long late_busy_ms = 100;

static int exists(const char* path) { return path == NULL || access(path, F_OK) == 0; }

static uint64_t cpu_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

static void write_words(int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (int word = 0; word < 4; ++word) __atomic_fetch_add(&words[word], 1, __ATOMIC_SEQ_CST);
  }
}

static void* early(void* unused) {
  (void)unused;
  while (!exists(go_file)) usleep(1000);
  write_words(100);
  for (;;) pause();
  return NULL;
}

static int late_finished = 0;

static void* late(void* unused) {
  (void)unused;
  while (cpu_ms() < (uint64_t)late_busy_ms) write_words(1);
  __atomic_fetch_add(&late_finished, 1, __ATOMIC_SEQ_CST);
  for (;;) pause();
  return NULL;
}

int main(int argc, char** argv) {
  int threads = 2, late_threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--late") == 0) late_threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--late-busy-ms") == 0) late_busy_ms = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--go") == 0) go_file = argv[i + 1];
    else if (strcmp(argv[i], "--done") == 0) done_file = argv[i + 1];
    else {
      fprintf(stderr, "hw_threads_target: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 0 || threads > 64 || late_threads < 0 || late_threads > 64) return 2;
  printf("obj words 0x%llx\n", (unsigned long long)(uintptr_t)words);
  for (int i = 0; i < threads; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, early, NULL) != 0) return 1;
  }
  printf("pid %d\n", (int)getpid());
  printf("ready\n");
  fflush(stdout);
  while (!exists(go_file)) usleep(1000);
  pthread_t late_ids[64];
  for (int i = 0; i < late_threads; ++i) {
    if (pthread_create(&late_ids[i], NULL, late, NULL) != 0) return 1;
  }
  while (__atomic_load_n(&late_finished, __ATOMIC_SEQ_CST) < late_threads) usleep(1000);
  if (done_file != NULL) {
    FILE* done = fopen(done_file, "w");
    if (done != NULL) fclose(done);
  }
  for (;;) pause();
}
