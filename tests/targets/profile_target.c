// profile_target: the ground-truth process for the profile tests (`xref
// profile`, and perf as the peer). Worker threads and the main thread spend
// calibrated shares of their CPU time in four known leaf functions, each at a
// known call depth under the thread's root function, and measure every
// leaf's CPU time themselves with CLOCK_THREAD_CPUTIME_ID. At stop they write
// the record: per thread, per phase, per leaf, the CPU nanoseconds, the
// calls and the call path, so a profiler's shares and callers are compared
// with what the process itself measured.
//
// The call paths (ROOT is main for the main thread, worker_main for the
// workers; every function named here is noinline, has external linkage, and
// does something after each call, so -O2 by gcc and clang keeps every frame:
// no inlining, no sibling call, no clone):
//   ROOT;work_loop;run_a;mid_a;leaf_a                              leaf_a at depth 3 under work_loop
//   ROOT;work_loop;run_b;chain_b1;chain_b2;chain_b3;leaf_b         leaf_b at depth 5
//   ROOT;work_loop;run_c;leaf_c                                    leaf_c at depth 2
//   ROOT;work_loop;run_r;recurse;recurse;...;leaf_r                recurse, --depth times (default 4)
// Each leaf spins in a hot loop of its own kind, easy to find with objdump:
//   leaf_a: a chain of dependent 64-bit multiplies (imul), leaf_b: xorshift
//   (shl/shr/xor), leaf_c: a dependent 64-bit division (div), leaf_r: a
//   dependent add/rotate chain (rol).
// A leaf spins until its budget of thread CPU is spent, reading the thread
// CPU clock about twice per call (the clock read is a system call, so a
// little of each leaf's time, under 1 %, is under clock_gettime and the
// kernel: a profiler's inclusive share of the leaf counts it, as the record
// does).
//
// Calibration: work_loop runs cycles; a cycle gives each leaf its share of
// the cycle's CPU budget, in the order a, b, c, r, less what the leaf ran
// over its budgets before (so the split holds over many cycles, whatever one
// run did). Each cycle's budget is random (2 to 8 ms of CPU), so no cycle
// length aliases with a sampling period (99 Hz is 10.1 ms).
//
// Usage:
//   profile_target [--threads N] [--split A,B,C,R] [--split2 A,B,C,R] [--depth N]
//                  [--go FILE] [--phase2 FILE] [--stop FILE] [--seconds N]
//                  [--record FILE] [--no-main-work]
//
//   --threads N      worker threads (0..16, default 2), named pt-worker0.. (pthread_setname_np)
//   --split A,B,C,R  percent of each cycle in leaf_a, leaf_b, leaf_c, leaf_r (sum 100;
//                    default 40,30,20,10)
//   --split2 ...     the split of phase 2 (default: the reverse of --split, 10,20,30,40)
//   --depth N        recurse frames above leaf_r (1..1000, default 4; 16 bytes of stack each:
//                    600 of them pass the 8 KB of stack perf --call-graph dwarf copies)
//   --go FILE        after ready, wait until FILE exists before any work (else start at once)
//   --phase2 FILE    switch to phase 2 when FILE exists (SIGUSR1 switches too)
//   --stop FILE      stop when FILE exists (SIGTERM and SIGINT stop too)
//   --seconds N      stop N seconds (wall clock) after go (default 0: until stopped)
//   --record FILE    where to write the record at stop
//   --no-main-work   the main thread only waits (it works by default, named pt-main)
// One more thread, pt-monitor, polls the files and the clock every 10 ms
// (about 0.1 % of the process's samples; not a working thread, not in the
// record). A thread takes up phase 2 or the stop at its next cycle (within
// 8 ms of its CPU).
// Bad arguments: a usage line on stderr, exit status 2.
//
// Startup lines on stdout (then flushed), before any work:
//   func NAME 0xLIVEADDR        for every function of the paths above
//   thread NAME TID             pt-main (unless --no-main-work), then pt-worker0..N-1
//   pid N
//   ready
// At stop, after every thread ended its cycle and the record is written: `done`.
//
// The record (written once, at stop):
//   pid N
//   split PHASE A B C R                     for phases 1 and 2
//   thread TID NAME ROOT
//   cpu TID PHASE NS                        the thread's CPU time in the phase (from go,
//                                           or the phase switch, to its end)
//   leaf TID PHASE LEAF NS CALLS PATH       PATH: root to leaf, ';'-separated (folded)
//   end
// A thread that did not run in a phase has cpu 0 and no leaf lines for it.
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// Keeps a function its own frame and symbol: no inlining, cloning or IPA
// signature changes (gcc), external linkage for the rest (clang).
#if defined(__clang__)
#define FRAME __attribute__((noinline, used))
#else
#define FRAME __attribute__((noipa, used))
#endif
// After a call: something the compiler must do after the callee returns, so
// the call is never a sibling (tail) call and the caller's frame stays.
#define AFTER_CALL() __asm__ volatile("" ::: "memory")

enum { kLeafA, kLeafB, kLeafC, kLeafR, kLeaves };
enum { kPhases = 2, kMaxThreads = 16, kMaxDepth = 1000 };
static const char* const kLeafNames[kLeaves] = {"leaf_a", "leaf_b", "leaf_c", "leaf_r"};

struct thread_state {
  pthread_t thread;
  pid_t tid;  // __atomic: set once the thread runs
  char name[16];
  const char* root;
  int phase;  // 0 or 1, this thread's current phase
  uint64_t phase_start_ns;
  uint64_t cpu_ns[kPhases];
  uint64_t leaf_ns[kPhases][kLeaves];
  uint64_t leaf_calls[kPhases][kLeaves];
  int64_t owed_ns[kLeaves];  // each leaf's budget not yet spent (negative: overspent), this phase
  uint64_t speed[kLeaves];  // each leaf's loop iterations per 1024 ns of CPU, as measured
  uint64_t random;  // the cycle budgets' generator
  uint64_t sink;    // the leaves' results: kept, so the loops are kept
};

static struct {
  unsigned threads;
  unsigned split[kPhases][kLeaves];
  unsigned depth;
  bool main_works;
  const char* go_file;
  const char* phase2_file;
  const char* stop_file;
  const char* record_path;
  uint64_t seconds;
} options = {2, {{40, 30, 20, 10}, {10, 20, 30, 40}}, 4, true, NULL, NULL, NULL, NULL, 0};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t phase2_requested;
static int go_flag;  // __atomic
static struct thread_state states[kMaxThreads + 1];

static uint64_t thread_cpu_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void pause_us(unsigned us) {
  struct timespec delay = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&delay, NULL);
}

static void count_leaf(struct thread_state* t, int leaf, uint64_t start, uint64_t end, uint64_t result) {
  t->leaf_ns[t->phase][leaf] += end - start;
  t->leaf_calls[t->phase][leaf] += 1;
  t->sink += result;
}

// --- the leaves: each spins in its own hot loop until its budget is spent ------------
// The empty asm with the value as operand keeps every iteration (no closed
// form, no vectorizing). A leaf reads the thread CPU clock (a system call)
// about twice per call, not once per chunk of its loop: it runs as many
// iterations as its budget left should take at the speed it measured so far,
// then reads the clock again. On this kind of VM a clock read costs some
// microseconds; read every few tens of microseconds it took 6 % of each leaf.

typedef uint64_t (*spin_loop)(uint64_t x, uint64_t iterations);

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void spend(struct thread_state* t, int leaf, uint64_t budget_ns, spin_loop spin) {
  const uint64_t start = thread_cpu_ns();
  uint64_t now = start, x = t->sink;
  while (now - start < budget_ns) {
    const uint64_t left_ns = budget_ns - (now - start);
    const uint64_t iterations = left_ns * t->speed[leaf] / 1024 + 64;
    x = spin(x, iterations);
    const uint64_t then = thread_cpu_ns();
    // iterations per 1024 ns, smoothed: one slow interval (an interrupt
    // counted as the thread's time) must not make the next call overshoot
    if (then > now) t->speed[leaf] = (3 * t->speed[leaf] + iterations * 1024 / (then - now) + 1) / 4;
    now = then;
  }
  count_leaf(t, leaf, start, now, x);
}

ALWAYS_INLINE uint64_t spin_a(uint64_t x, uint64_t iterations) {
  x |= 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;  // the hot loop: dependent imul
    __asm__("" : "+r"(x));
  }
  return x;
}

ALWAYS_INLINE uint64_t spin_b(uint64_t x, uint64_t iterations) {
  x |= 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    x ^= x << 13;  // xorshift64
    x ^= x >> 7;
    x ^= x << 17;
    __asm__("" : "+r"(x));
  }
  return x;
}

ALWAYS_INLINE uint64_t spin_c(uint64_t x, uint64_t iterations) {
  uint64_t d = 3;
  x |= 0x8000000000000000u;
  for (uint64_t i = 0; i < iterations; ++i) {
    x = x / d + 0x8000000000000000u;  // dependent 64-bit div
    __asm__("" : "+r"(x), "+r"(d));
  }
  return x;
}

ALWAYS_INLINE uint64_t spin_r(uint64_t x, uint64_t iterations) {
  for (uint64_t i = 0; i < iterations; ++i) {
    x = ((x << 9) | (x >> 55)) + 0x9e3779b97f4a7c15u;  // dependent rol + add
    __asm__("" : "+r"(x));
  }
  return x;
}

FRAME void leaf_a(struct thread_state* t, uint64_t budget_ns) { spend(t, kLeafA, budget_ns, spin_a); }
FRAME void leaf_b(struct thread_state* t, uint64_t budget_ns) { spend(t, kLeafB, budget_ns, spin_b); }
FRAME void leaf_c(struct thread_state* t, uint64_t budget_ns) { spend(t, kLeafC, budget_ns, spin_c); }
FRAME void leaf_r(struct thread_state* t, uint64_t budget_ns) { spend(t, kLeafR, budget_ns, spin_r); }

// --- the paths to the leaves -----------------------------------------------------------

// One step of a path: calls the next function, then does something after
// it (no sibling call), so the step keeps a frame of its own.
#define STEP(name, next)                                      \
  FRAME void name(struct thread_state* t, uint64_t budget_ns) { \
    next(t, budget_ns);                                       \
    AFTER_CALL();                                             \
  }

STEP(mid_a, leaf_a)
STEP(run_a, mid_a)
STEP(chain_b3, leaf_b)
STEP(chain_b2, chain_b3)
STEP(chain_b1, chain_b2)
STEP(run_b, chain_b1)
STEP(run_c, leaf_c)

FRAME void recurse(struct thread_state* t, uint64_t budget_ns, unsigned left) {
  if (left <= 1) {
    leaf_r(t, budget_ns);
  } else {
    recurse(t, budget_ns, left - 1);
  }
  AFTER_CALL();
}

FRAME void run_r(struct thread_state* t, uint64_t budget_ns) {
  recurse(t, budget_ns, options.depth);
  AFTER_CALL();
}

// --- the cycles --------------------------------------------------------------------------

static uint64_t next_random(struct thread_state* t) {
  t->random ^= t->random << 13;
  t->random ^= t->random >> 7;
  t->random ^= t->random << 17;
  return t->random;
}

// Ends the thread's current phase: its CPU time since the phase began.
static void close_phase(struct thread_state* t) {
  const uint64_t now = thread_cpu_ns();
  t->cpu_ns[t->phase] += now - t->phase_start_ns;
  t->phase_start_ns = now;
}

// Gives LEAF its share of a cycle of CYCLE_NS through RUN. A leaf's run
// can take longer than its budget (a slower stretch of its loop: an
// interrupt or a stolen slice counted as the thread's time); what it ran
// over is taken from its next budgets, so over many cycles its share is the
// split's, whatever one run did.
ALWAYS_INLINE void give(struct thread_state* t, int leaf, uint64_t cycle_ns, void (*run)(struct thread_state*, uint64_t)) {
  const unsigned share = options.split[t->phase][leaf];
  if (share == 0) return;
  t->owed_ns[leaf] += (int64_t)(cycle_ns * share / 100);
  if (t->owed_ns[leaf] <= 0) return;
  const uint64_t before = t->leaf_ns[t->phase][leaf];
  run(t, (uint64_t)t->owed_ns[leaf]);
  t->owed_ns[leaf] -= (int64_t)(t->leaf_ns[t->phase][leaf] - before);
}

FRAME void work_loop(struct thread_state* t) {
  t->phase_start_ns = thread_cpu_ns();
  while (!stop_requested) {
    if (phase2_requested && t->phase == 0) {
      close_phase(t);
      t->phase = 1;
      memset(t->owed_ns, 0, sizeof t->owed_ns);
    }
    const uint64_t cycle_ns = 2000000 + next_random(t) % 6000000;
    give(t, kLeafA, cycle_ns, run_a);
    give(t, kLeafB, cycle_ns, run_b);
    give(t, kLeafC, cycle_ns, run_c);
    give(t, kLeafR, cycle_ns, run_r);
  }
  close_phase(t);
  AFTER_CALL();
}

static void wait_for_go(void) {
  while (!__atomic_load_n(&go_flag, __ATOMIC_ACQUIRE) && !stop_requested) pause_us(1000);
}

FRAME void* worker_main(void* argument) {
  struct thread_state* t = argument;
  pthread_setname_np(pthread_self(), t->name);
  __atomic_store_n(&t->tid, gettid(), __ATOMIC_RELEASE);
  wait_for_go();
  work_loop(t);
  AFTER_CALL();
  return NULL;
}

// --- stop and phase 2: signals, files, the clock ----------------------------------------

static void on_signal(int signal_number) {
  if (signal_number == SIGUSR1) {
    phase2_requested = 1;
  } else {
    stop_requested = 1;
  }
}

static bool file_exists(const char* path) {
  struct stat info;
  return path != NULL && stat(path, &info) == 0;
}

// Watches the files and the clock for the working threads (the main thread
// too may work): a thread that sleeps between polls, so its CPU is nearly nil.
static void* monitor_main(void* argument) {
  (void)argument;
  pthread_setname_np(pthread_self(), "pt-monitor");
  wait_for_go();
  const uint64_t deadline = options.seconds > 0 ? monotonic_ns() + options.seconds * 1000000000u : 0;
  while (!stop_requested) {
    if (file_exists(options.stop_file) || (deadline != 0 && monotonic_ns() >= deadline)) stop_requested = 1;
    if (file_exists(options.phase2_file)) phase2_requested = 1;
    pause_us(10000);
  }
  return NULL;
}

// --- options -----------------------------------------------------------------------------

static void usage(const char* problem) {
  fprintf(stderr,
          "profile_target: %s\nusage: profile_target [--threads N] [--split A,B,C,R] [--split2 A,B,C,R] "
          "[--depth N] [--go FILE] [--phase2 FILE] [--stop FILE] [--seconds N] [--record FILE] [--no-main-work]\n",
          problem);
  exit(2);
}

// TEXT as COUNT decimal numbers separated by commas, each from LOW to HIGH.
static void parse_values(const char* option, const char* text, int count, uint64_t low, uint64_t high,
                         uint64_t* values) {
  if (text == NULL) usage("missing value");
  const char* cursor = text;
  for (int i = 0; i < count; ++i) {
    char* end = NULL;
    errno = 0;
    values[i] = strtoull(cursor, &end, 10);
    const char separator = i + 1 < count ? ',' : '\0';
    if (*cursor < '0' || *cursor > '9' || *end != separator || errno != 0 || values[i] < low || values[i] > high) {
      fprintf(stderr, "profile_target: %s %s: expected %s from %" PRIu64 " to %" PRIu64 "\n", option, text,
              count == 1 ? "a number" : "comma-separated numbers", low, high);
      usage("bad value");
    }
    cursor = end + 1;
  }
}

static uint64_t parse_number(const char* option, const char* text, uint64_t low, uint64_t high) {
  uint64_t value = 0;
  parse_values(option, text, 1, low, high, &value);
  return value;
}

// A split: four percentages A,B,C,R that sum to 100.
static void parse_split(const char* option, const char* text, unsigned* split) {
  uint64_t values[kLeaves];
  parse_values(option, text, kLeaves, 0, 100, values);
  unsigned total = 0;
  for (int leaf = 0; leaf < kLeaves; ++leaf) total += split[leaf] = (unsigned)values[leaf];
  if (total != 100) {
    fprintf(stderr, "profile_target: %s %s: the percentages sum to %u, not 100\n", option, text, total);
    usage("bad split");
  }
}

static void parse_options(int argc, char** argv) {
  bool split2_given = false;
  for (int i = 1; i < argc; ++i) {
    const char* option = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(option, "--threads") == 0) {
      options.threads = (unsigned)parse_number(option, value, 0, kMaxThreads), ++i;
    } else if (strcmp(option, "--split") == 0) {
      parse_split(option, value, options.split[0]), ++i;
    } else if (strcmp(option, "--split2") == 0) {
      parse_split(option, value, options.split[1]), ++i;
      split2_given = true;
    } else if (strcmp(option, "--depth") == 0) {
      options.depth = (unsigned)parse_number(option, value, 1, kMaxDepth), ++i;
    } else if (strcmp(option, "--seconds") == 0) {
      options.seconds = parse_number(option, value, 0, 86400), ++i;
    } else if (strcmp(option, "--go") == 0 || strcmp(option, "--phase2") == 0 || strcmp(option, "--stop") == 0 ||
               strcmp(option, "--record") == 0) {
      if (value == NULL || value[0] == '\0') usage("missing file name");
      const char** slot = option[2] == 'g'   ? &options.go_file
                          : option[2] == 'p' ? &options.phase2_file
                          : option[2] == 's' ? &options.stop_file
                                             : &options.record_path;
      *slot = value, ++i;
    } else if (strcmp(option, "--no-main-work") == 0) {
      options.main_works = false;
    } else {
      fprintf(stderr, "profile_target: unknown option %s\n", option);
      usage("bad option");
    }
  }
  if (!split2_given) {
    for (int leaf = 0; leaf < kLeaves; ++leaf) options.split[1][leaf] = options.split[0][kLeaves - 1 - leaf];
  }
  if (options.threads == 0 && !options.main_works) usage("nothing would work: --threads 0 with --no-main-work");
}

// --- the record ----------------------------------------------------------------------------

// PATH of LEAF for a thread whose root is ROOT (root to leaf, ';'-separated).
static void print_path(FILE* out, const char* root, int leaf) {
  fprintf(out, "%s;work_loop;", root);
  switch (leaf) {
    case kLeafA:
      fprintf(out, "run_a;mid_a;leaf_a");
      break;
    case kLeafB:
      fprintf(out, "run_b;chain_b1;chain_b2;chain_b3;leaf_b");
      break;
    case kLeafC:
      fprintf(out, "run_c;leaf_c");
      break;
    default:
      fprintf(out, "run_r;");
      for (unsigned i = 0; i < options.depth; ++i) fprintf(out, "recurse;");
      fprintf(out, "leaf_r");
  }
}

static int write_record(const struct thread_state* threads, unsigned count) {
  FILE* out = fopen(options.record_path, "w");
  if (out == NULL) {
    fprintf(stderr, "profile_target: cannot write %s: %s\n", options.record_path, strerror(errno));
    return 1;
  }
  fprintf(out, "pid %d\n", (int)getpid());
  for (int phase = 0; phase < kPhases; ++phase) {
    fprintf(out, "split %d", phase + 1);
    for (int leaf = 0; leaf < kLeaves; ++leaf) fprintf(out, " %u", options.split[phase][leaf]);
    fprintf(out, "\n");
  }
  for (unsigned i = 0; i < count; ++i) {
    const struct thread_state* t = &threads[i];
    fprintf(out, "thread %d %s %s\n", (int)t->tid, t->name, t->root);
    for (int phase = 0; phase < kPhases; ++phase) {
      fprintf(out, "cpu %d %d %" PRIu64 "\n", (int)t->tid, phase + 1, t->cpu_ns[phase]);
      for (int leaf = 0; leaf < kLeaves; ++leaf) {
        if (t->leaf_calls[phase][leaf] == 0) continue;
        fprintf(out, "leaf %d %d %s %" PRIu64 " %" PRIu64 " ", (int)t->tid, phase + 1, kLeafNames[leaf],
                t->leaf_ns[phase][leaf], t->leaf_calls[phase][leaf]);
        print_path(out, t->root, leaf);
        fprintf(out, "\n");
      }
    }
  }
  fprintf(out, "end\n");
  return fclose(out) == 0 ? 0 : 1;
}

// --- main ------------------------------------------------------------------------------------

int main(int argc, char** argv) {
  parse_options(argc, argv);
  const struct sigaction action = {.sa_handler = on_signal};  // no SA_RESTART: a signal ends the waits at once
  static const int signals[] = {SIGTERM, SIGINT, SIGUSR1};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) sigaction(signals[i], &action, NULL);
  signal(SIGPIPE, SIG_IGN);

  // The main thread's state is states[0] when it works; workers follow.
  const unsigned first_worker = options.main_works ? 1 : 0;
  const unsigned count = first_worker + options.threads;
  for (unsigned i = 0; i < count; ++i) {
    struct thread_state* t = &states[i];
    t->random = 0x9e3779b97f4a7c15u * (i + 1);
    for (int leaf = 0; leaf < kLeaves; ++leaf) t->speed[leaf] = 64;  // slow: the first calls measure
    if (i < first_worker) {
      snprintf(t->name, sizeof t->name, "pt-main");
      t->root = "main";
      t->tid = gettid();
      pthread_setname_np(pthread_self(), t->name);
    } else {
      snprintf(t->name, sizeof t->name, "pt-worker%u", i - first_worker);
      t->root = "worker_main";
      if (pthread_create(&t->thread, NULL, worker_main, t) != 0) abort();
    }
  }
  pthread_t monitor;
  if (pthread_create(&monitor, NULL, monitor_main, NULL) != 0) abort();

  static const struct {
    const char* name;
    const void* address;
  } functions[] = {
      {"main", (const void*)main},         {"worker_main", (const void*)worker_main},
      {"work_loop", (const void*)work_loop}, {"run_a", (const void*)run_a},
      {"mid_a", (const void*)mid_a},       {"leaf_a", (const void*)leaf_a},
      {"run_b", (const void*)run_b},       {"chain_b1", (const void*)chain_b1},
      {"chain_b2", (const void*)chain_b2}, {"chain_b3", (const void*)chain_b3},
      {"leaf_b", (const void*)leaf_b},     {"run_c", (const void*)run_c},
      {"leaf_c", (const void*)leaf_c},     {"run_r", (const void*)run_r},
      {"recurse", (const void*)recurse},   {"leaf_r", (const void*)leaf_r},
  };
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; ++i) {
    printf("func %s %p\n", functions[i].name, functions[i].address);
  }
  for (unsigned i = 0; i < count; ++i) {
    pid_t tid;
    while ((tid = __atomic_load_n(&states[i].tid, __ATOMIC_ACQUIRE)) == 0) pause_us(100);
    printf("thread %s %d\n", states[i].name, (int)tid);
  }
  printf("pid %d\n", (int)getpid());
  printf("ready\n");
  fflush(stdout);

  if (options.go_file != NULL) {
    while (!stop_requested && !file_exists(options.go_file)) pause_us(1000);
  }
  __atomic_store_n(&go_flag, 1, __ATOMIC_RELEASE);
  if (options.main_works) {
    work_loop(&states[0]);
    AFTER_CALL();
  }
  while (!stop_requested) pause_us(2000);
  for (unsigned i = first_worker; i < count; ++i) pthread_join(states[i].thread, NULL);
  pthread_join(monitor, NULL);

  const int status = options.record_path != NULL ? write_record(states, count) : 0;
  printf("done\n");
  fflush(stdout);
  return status;
}
