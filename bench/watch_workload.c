/* watch_workload: the workload bench/run_watch.sh measures `xref watch`
   against (not a test).

     watch_workload --calls N [--store watched|pointer|static]
     watch_workload --moves K [--pace-us U]

   Prints "obj NAME 0xLIVEADDR SIZE" for g_watched, g_other and g_slot,
   "ready PID", and blocks until it reads one byte (or EOF) on stdin, so a
   watch can attach first. Then, in the one thread there is:

   --calls N: N stores in a timed loop (CLOCK_MONOTONIC and
     CLOCK_THREAD_CPUTIME_ID around it, as bench_target), each writing i + 1:
       watched  g_watched = i + 1         (write_watched: a rip-relative store
                                           to the watched global, new each time)
       pointer  *p = i + 1, p = &g_other  (write_pointer: a store through a
                                           register, which no static pruning can
                                           rule out, to a global nobody watches)
       static   g_other = i + 1           (write_static: a rip-relative store
                                           that misses every watched range: pruned,
                                           unless a --follow range may move there)
     and prints "ns_per_call X", "cpu_ns_per_call Y", "calls N" (a call is
     one store) and "final NAME VALUE" of the global written.
   --moves K: moves the block g_slot points to K times with realloc, with a
     U us pause (default 2000) after each move and after each write of the
     new block's length field (offset 16: set_length); the blocker
     allocations below make every move a real one. Prints "moved M" (the
     moves where the pointer changed: K) and "length_writes K".

   It then waits for EOF on stdin before exiting, so a watcher can detach
   from a live process. Bad arguments: a usage line, exit status 2. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* WRITER keeps write_pointer's store a store through a register. */
#include "generated_functions.h"


/* volatile: one real store per iteration, none folded away. */
volatile uint64_t g_watched;
volatile uint64_t g_other;

/* The moving block: a tag, the length field a --follow watch keeps on
   (offset 16), and data. */
struct moving {
  char tag[16];
  uint64_t length;
  uint64_t data[];
};
struct moving* volatile g_slot;

static void* blockers[4096]; /* allocations that keep realloc from growing in place */
static size_t blocker_count;

WRITER void write_watched(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) g_watched = i + 1;
}

WRITER void write_pointer(volatile uint64_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) *p = i + 1;
}

WRITER void write_static(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) g_other = i + 1;
}

/* realloc, then something right after the new block so the next realloc
   cannot grow it in place (larger than every block freed before, it comes
   from the top of the heap as the new block did), then the slot. */
WRITER struct moving* move_buffer(size_t capacity) {
  struct moving* const block = realloc(g_slot, capacity);
  if (block == NULL) abort();
  if (blocker_count < sizeof blockers / sizeof blockers[0]) blockers[blocker_count++] = malloc(capacity + 64);
  g_slot = block;
  return block;
}

WRITER void set_length(struct moving* block, uint64_t length) { block->length = length; }

/* The system call, not the vDSO: gdb's software watchpoint single-steps
   every instruction, and the vDSO's clock read retries its seqlock whenever
   a timer tick lands inside it, which at a ptrace round trip per instruction
   is every time (it never returned). One call before and after the loop. */
static uint64_t now_ns(clockid_t clock) {
  struct timespec ts;
  syscall(SYS_clock_gettime, clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_us(uint64_t us) {
  struct timespec delay = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  nanosleep(&delay, NULL);
}

static int usage(void) {
  fprintf(stderr,
          "usage: watch_workload --calls N [--store watched|pointer|static] | --moves K [--pace-us U]\n");
  return 2;
}

static int parse_count(const char* text, uint64_t* out) {
  char* end = NULL;
  *out = strtoull(text, &end, 10);
  return *end == '\0' && *out > 0;
}

int main(int argc, char** argv) {
  uint64_t calls = 0, moves = 0, pace_us = 2000;
  const char* store = "watched";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      if (!parse_count(argv[++i], &calls)) return usage();
    } else if (strcmp(argv[i], "--moves") == 0 && i + 1 < argc) {
      if (!parse_count(argv[++i], &moves)) return usage();
    } else if (strcmp(argv[i], "--pace-us") == 0 && i + 1 < argc) {
      if (!parse_count(argv[++i], &pace_us)) return usage();
    } else if (strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
      store = argv[++i];
      if (strcmp(store, "watched") != 0 && strcmp(store, "pointer") != 0 && strcmp(store, "static") != 0) {
        return usage();
      }
    } else {
      return usage();
    }
  }
  if ((calls == 0) == (moves == 0)) return usage();

  /* One arena: the blockers come from the heap the moved block lives in. */
  mallopt(M_ARENA_MAX, 1);
  size_t capacity = 64;
  g_slot = calloc(1, capacity);
  if (g_slot == NULL) return 1;
  memcpy(g_slot->tag, "watch_workload", 15);
  blockers[blocker_count++] = malloc(capacity + 64);

  printf("obj g_watched %p %zu\nobj g_other %p %zu\nobj g_slot %p %zu\nready %d\n", (void*)&g_watched,
         sizeof g_watched, (void*)&g_other, sizeof g_other, (void*)&g_slot, sizeof g_slot, (int)getpid());
  fflush(stdout);
  char go;
  if (read(STDIN_FILENO, &go, 1) < 0) return 1;

  if (calls > 0) {
    const uint64_t begin = now_ns(CLOCK_MONOTONIC);
    const uint64_t cpu_begin = now_ns(CLOCK_THREAD_CPUTIME_ID);
    if (strcmp(store, "watched") == 0) write_watched(calls);
    else if (strcmp(store, "pointer") == 0) write_pointer(&g_other, calls);
    else write_static(calls);
    const uint64_t cpu_elapsed = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_begin;
    const uint64_t elapsed = now_ns(CLOCK_MONOTONIC) - begin;
    printf("ns_per_call %.1f\ncpu_ns_per_call %.1f\ncalls %" PRIu64 "\nfinal %s %" PRIu64 "\n",
           (double)elapsed / (double)calls, (double)cpu_elapsed / (double)calls, calls,
           strcmp(store, "watched") == 0 ? "g_watched" : "g_other",
           strcmp(store, "watched") == 0 ? g_watched : g_other);
  } else {
    uint64_t moved = 0;
    for (uint64_t k = 0; k < moves; ++k) {
      struct moving* const before = g_slot;
      capacity += 32;
      struct moving* const block = move_buffer(capacity);
      if (block != before) ++moved;
      pause_us(pace_us);
      set_length(block, capacity);
      pause_us(pace_us);
    }
    printf("moved %" PRIu64 "\nlength_writes %" PRIu64 "\nslot %p\n", moved, moves, (void*)g_slot);
  }
  fflush(stdout);
  while (read(STDIN_FILENO, &go, 1) > 0) {
  }
  for (size_t i = 0; i < blocker_count; ++i) free(blockers[i]);
  free(g_slot);
  return 0;
}
