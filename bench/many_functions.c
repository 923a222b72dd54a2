/* many_functions: the target of bench/run_probe.sh's attach-time part: 1,000
   small distinct functions fn_000 .. fn_999, built -O2 like any program, so
   `xref probe` (and bpftrace) can be given 1,000 probe-able addresses.

     many_functions

   Prints "ready PID" and "functions 1000", then, for each byte it reads on
   stdin, calls every function once and prints "called N" (N calls so far,
   per function). It exits on EOF. A run that arms probes on all of them,
   sends one byte and stops the tracer must count exactly one hit at each. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "generated_functions.h"

/* noipa keeps each function as written: no clones, no inlining, no
   identical-code folding of two functions into one address. */
#define PROBED __attribute__((noipa, used))

/* fn_ABC(x) = (x ^ (x >> 7)) * (K + ABC): a distinct constant per function. */
#define DEFINE(a, b, c) \
  PROBED uint64_t fn_##a##b##c(uint64_t x) { return (x ^ (x >> 7)) * (UINT64_C(0x9e3779b97f4a7c15) + a * 100 + b * 10 + c); }
#define POINTER(a, b, c) fn_##a##b##c,

THOUSAND(DEFINE)

static uint64_t (*const functions[])(uint64_t) = {THOUSAND(POINTER)};

int main(void) {
  const size_t count = sizeof functions / sizeof functions[0];
  printf("ready %d\nfunctions %zu\n", (int)getpid(), count);
  fflush(stdout);
  uint64_t rounds = 0;
  uint64_t sum = 0;
  char go;
  while (read(STDIN_FILENO, &go, 1) > 0) {
    for (size_t i = 0; i < count; ++i) sum += functions[i](i + rounds);
    ++rounds;
    printf("called %" PRIu64 " checksum %" PRIx64 "\n", rounds, sum);
    fflush(stdout);
  }
  return 0;
}
