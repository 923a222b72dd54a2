/* many_stores: the target of bench/run_watch.sh's attach-time part: 1,000
   small distinct functions st_000 .. st_999, each with 10 stores through a
   pointer argument (which no static pruning can rule out, so a stores watch
   probes all 10,000) and one rip-relative store to a counter of its own
   (which misses the watched range, so it is pruned), built -O2 like any
   program.

     many_stores

   Prints "ready PID", "functions 1000" (as many_functions, so
   bench/watch_attach.py drives it with probe_attach.py's code) and "obj
   scratch 0xLIVEADDR SIZE", then, for each byte it reads on stdin, calls
   every function once, st_N writing scratch[10 N .. 10 N + 9], and prints
   "called N checksum X" (N calls so far, per function; X the sum of
   scratch). It exits on EOF. A watch of all of scratch that arms before
   one go byte must see exactly one write from each of the 10,000 stores. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "generated_functions.h"

#define FUNCTIONS 1000
#define STORES 10

uint64_t scratch[FUNCTIONS * STORES];
volatile uint64_t calls_of[FUNCTIONS];

/* volatile: ten separate 8-byte stores, none merged into a vector store. */
#define DEFINE(a, b, c)                                                              \
  WRITER void st_##a##b##c(volatile uint64_t* p, uint64_t x) {                       \
    const uint64_t k = UINT64_C(0x9e3779b97f4a7c15) + a * 100 + b * 10 + c;          \
    p[0] = x * k;                                                                    \
    p[1] = x ^ k;                                                                    \
    p[2] = x + k;                                                                    \
    p[3] = (x * k) >> 3;                                                             \
    p[4] = x - k;                                                                    \
    p[5] = (x ^ k) * 5;                                                              \
    p[6] = (x + k) * 7;                                                              \
    p[7] = x * k * 9;                                                                \
    p[8] = (x | k) + 11;                                                             \
    p[9] = (x & k) + 13;                                                             \
    calls_of[a * 100 + b * 10 + c]++;                                                \
  }
#define POINTER(a, b, c) st_##a##b##c,

THOUSAND(DEFINE)

static void (*const functions[])(volatile uint64_t*, uint64_t) = {THOUSAND(POINTER)};

int main(void) {
  const size_t count = sizeof functions / sizeof functions[0];
  printf("ready %d\nfunctions %zu\nobj scratch %p %zu\n", (int)getpid(), count, (void*)scratch, sizeof scratch);
  fflush(stdout);
  uint64_t rounds = 0;
  char go;
  while (read(STDIN_FILENO, &go, 1) > 0) {
    ++rounds;
    for (size_t i = 0; i < count; ++i) functions[i](scratch + i * STORES, i + rounds);
    uint64_t sum = 0;
    for (size_t i = 0; i < FUNCTIONS * STORES; ++i) sum += scratch[i];
    printf("called %" PRIu64 " checksum %" PRIx64 "\n", rounds, sum);
    fflush(stdout);
  }
  return 0;
}
