/* many_stores: the target of bench/run_watch.sh's attach-time part: 1,000
   small distinct functions st_000 .. st_999, each with 10 stores through a
   pointer argument (which no static pruning can rule out, so a stores watch
   probes all 10,000) and one rip-relative store to a counter of its own
   (which misses the watched range, so it is pruned), built -O2 like any
   program.

     many_stores

   Prints "obj scratch 0xLIVEADDR SIZE", "ready PID" and "functions 1000",
   then, for each byte it reads on stdin, calls every function once, st_N
   writing scratch[10 N .. 10 N + 9], and prints "called N" (N calls so far,
   per function). It exits on EOF. A watch of all of scratch that arms before
   one go byte must see exactly one write from each of the 10,000 stores. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__clang__)
#define WRITER __attribute__((noinline, used))
#else
#define WRITER __attribute__((noipa, used))
#endif

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

#define TEN(M, a, b) M(a, b, 0) M(a, b, 1) M(a, b, 2) M(a, b, 3) M(a, b, 4) M(a, b, 5) M(a, b, 6) M(a, b, 7) M(a, b, 8) M(a, b, 9)
#define HUNDRED(M, a) \
  TEN(M, a, 0) TEN(M, a, 1) TEN(M, a, 2) TEN(M, a, 3) TEN(M, a, 4) TEN(M, a, 5) TEN(M, a, 6) TEN(M, a, 7) TEN(M, a, 8) TEN(M, a, 9)
#define THOUSAND(M)                                                                                             \
  HUNDRED(M, 0) HUNDRED(M, 1) HUNDRED(M, 2) HUNDRED(M, 3) HUNDRED(M, 4) HUNDRED(M, 5) HUNDRED(M, 6) HUNDRED(M, 7) \
  HUNDRED(M, 8) HUNDRED(M, 9)

THOUSAND(DEFINE)

static void (*const functions[])(volatile uint64_t*, uint64_t) = {THOUSAND(POINTER)};

int main(void) {
  const size_t count = sizeof functions / sizeof functions[0];
  printf("obj scratch %p %zu\nready %d\nfunctions %zu\n", (void*)scratch, sizeof scratch, (int)getpid(), count);
  fflush(stdout);
  uint64_t rounds = 0;
  char go;
  while (read(STDIN_FILENO, &go, 1) > 0) {
    ++rounds;
    for (size_t i = 0; i < count; ++i) functions[i](scratch + i * STORES, i + rounds);
    printf("called %" PRIu64 "\n", rounds);
    fflush(stdout);
  }
  return 0;
}
