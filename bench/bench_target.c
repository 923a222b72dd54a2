/* bench_target: the workload bench/run.sh measures tracers against.

     bench_target --calls N [--untraced | --nop-entry]

   Prints "ready PID" and blocks until it reads one byte (or EOF) on stdin,
   so a tracer can attach first. Then it calls hot(i) N times, from outer(n)
   or, with --untraced, from untraced_outer(n) (so a tracer started on
   `outer` never opens a window), times that loop with CLOCK_MONOTONIC and
   CLOCK_THREAD_CPUTIME_ID and prints "ns_per_call X", "cpu_ns_per_call Y"
   and "calls N". It then waits for EOF on stdin
   before exiting, so the tracer can detach from a live process. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* noipa keeps each function's symbol, call sites and rets as written: no
   clones, no inlining, no merging. */
#define PROBED __attribute__((noipa, used))

/* hot(i) = (i * K) ^ (i >> 7), written in assembly so that its only ret
   carries a symbol of its own: hot_ret, a local one-byte function symbol
   inside hot. Debian's bpftrace 0.17 is built without probe-offset checking
   and refuses hot+21 or an address inside hot (even with --unsafe), and it
   silently drops non-function symbols; with hot_ret it probes the same two
   sites as everyone else. */
uint64_t hot(uint64_t i);
__asm__(
    "  .text\n"
    "  .p2align 4\n"
    "  .globl hot\n"
    "  .type hot, @function\n"
    "hot:\n"
    "  movabs $0x9e3779b97f4a7c15, %rax\n"
    "  imul %rdi, %rax\n"
    "  shr $7, %rdi\n"
    "  xor %rdi, %rax\n"
    "  .type hot_ret, @function\n"
    "hot_ret:\n"
    "  ret\n"
    "  .size hot_ret, 1\n"
    "  .size hot, . - hot\n");

/* hot_nop: hot's body behind endbr64 and a 5-byte nop (nopl 0(%rax,%rax)),
   the prologue -fcf-protection with -mfentry-style patching leaves; xref
   puts its entry probe on the nop, which kernels with optimised uprobes
   (6.18+) turn into a call instead of an int3 trap. */
uint64_t hot_nop(uint64_t i);
__asm__(
    "  .text\n"
    "  .p2align 4\n"
    "  .globl hot_nop\n"
    "  .type hot_nop, @function\n"
    "hot_nop:\n"
    "  endbr64\n"
    "  .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopl 0x0(%rax,%rax,1) */
    "  movabs $0x9e3779b97f4a7c15, %rax\n"
    "  imul %rdi, %rax\n"
    "  shr $7, %rdi\n"
    "  xor %rdi, %rax\n"
    "  ret\n"
    "  .size hot_nop, . - hot_nop\n");

PROBED uint64_t outer(uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += hot(i);
  return sum;
}

PROBED uint64_t untraced_outer(uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += hot(i);
  return sum;
}

PROBED uint64_t outer_nop(uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += hot_nop(i);
  return sum;
}

static uint64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_target --calls N [--untraced | --nop-entry]\n");
  return 2;
}

int main(int argc, char** argv) {
  uint64_t calls = 0;
  int untraced = 0;
  int nop_entry = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      char* end = NULL;
      calls = strtoull(argv[++i], &end, 10);
      if (*end != '\0' || calls == 0) return usage();
    } else if (strcmp(argv[i], "--untraced") == 0) {
      untraced = 1;
    } else if (strcmp(argv[i], "--nop-entry") == 0) {
      nop_entry = 1;
    } else {
      return usage();
    }
  }
  if (calls == 0) return usage();

  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char go;
  if (read(STDIN_FILENO, &go, 1) < 0) return 1;

  /* Wall clock is the measurement; the thread's CPU time (user + kernel,
     so including the uprobe handling that runs on this thread) is a cross
     check that other processes taking the CPU away do not inflate. */
  const uint64_t begin = now_ns(CLOCK_MONOTONIC);
  const uint64_t cpu_begin = now_ns(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t sum = untraced ? untraced_outer(calls) : nop_entry ? outer_nop(calls) : outer(calls);
  const uint64_t cpu_elapsed = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_begin;
  const uint64_t elapsed = now_ns(CLOCK_MONOTONIC) - begin;

  printf("ns_per_call %.1f\ncpu_ns_per_call %.1f\ncalls %" PRIu64 "\nchecksum %" PRIx64 "\n",
         (double)elapsed / (double)calls, (double)cpu_elapsed / (double)calls, calls, sum);
  fflush(stdout);
  while (read(STDIN_FILENO, &go, 1) > 0) {
  }
  return 0;
}
