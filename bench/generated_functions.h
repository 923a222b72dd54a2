/* bench/generated_functions.h: what the benchmark targets with many
   generated functions share (many_functions.c, many_stores.c) and the
   writer attribute of the watch targets (watch_workload.c). */
#ifndef XREF_BENCH_GENERATED_FUNCTIONS_H
#define XREF_BENCH_GENERATED_FUNCTIONS_H

/* A function kept as written: its own symbol, no inlining, no clone, no
   caller's knowledge of its arguments (clang has no noipa). */
#if defined(__clang__)
#define WRITER __attribute__((noinline, used))
#else
#define WRITER __attribute__((noipa, used))
#endif

/* M(a, b, c) for every three-digit number abc, 000 .. 999, in order. */
#define TEN(M, a, b) M(a, b, 0) M(a, b, 1) M(a, b, 2) M(a, b, 3) M(a, b, 4) M(a, b, 5) M(a, b, 6) M(a, b, 7) M(a, b, 8) M(a, b, 9)
#define HUNDRED(M, a) \
  TEN(M, a, 0) TEN(M, a, 1) TEN(M, a, 2) TEN(M, a, 3) TEN(M, a, 4) TEN(M, a, 5) TEN(M, a, 6) TEN(M, a, 7) TEN(M, a, 8) TEN(M, a, 9)
#define THOUSAND(M)                                                                                             \
  HUNDRED(M, 0) HUNDRED(M, 1) HUNDRED(M, 2) HUNDRED(M, 3) HUNDRED(M, 4) HUNDRED(M, 5) HUNDRED(M, 6) HUNDRED(M, 7) \
  HUNDRED(M, 8) HUNDRED(M, 9)

#endif
