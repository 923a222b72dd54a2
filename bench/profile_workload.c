/* profile_workload: the CPU-bound workload bench/run_profile.sh samples to
   measure what `xref profile` (and perf record, its peer) costs the process
   it profiles. It counts its own throughput, so a slowdown is read from the
   target, not from the profiler.

     profile_workload [--threads N] [--seconds S]

   Runs N threads (default 2, the main thread one of them: its stacks start
   at _start, the others' at libc's clone3), prints "pid PID", "threads N"
   and "ready", and blocks until it reads one byte on stdin (the go byte; a
   profiler attaches first). Then every thread runs work units as fast as it
   can until S seconds (default 5, CLOCK_MONOTONIC) after the go byte. A
   unit walks a few levels of calls in this program and in libc, built the
   way users build (-O2, PIE, no frame-pointer flags: gcc omits them at -O2,
   as Debian's libc does):

     run_units -> do_unit -> sort_phase -> qsort (libc's merge sort,
                                           recursive) -> compare_keys
                          -> hash_phase -> hash_tree (recursive, 6 deep) -> mix_block
                          -> format_phase -> snprintf (libc's printf engine)

   noipa keeps each function real (no inlining, clone or sibling call). At
   the end it prints its figures, then waits for EOF on stdin before it
   exits (a profiler may read its state from a live process first):

     units_total X          (units all threads finished)
     wall_ns X              (go byte to the last thread's end)
     units_per_s X          (units_total / wall)
     cpu_ns X               (the threads' CPU time while working, summed:
                             CLOCK_THREAD_CPUTIME_ID of each)
     units_per_cpu_s X
     thread K units X cpu_ns X
     done

   EOF before the go byte exits at once ("units_total 0"). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FRAME __attribute__((noipa, used))
#define MAX_THREADS 64
#define KEYS 192
#define TREE_DEPTH 6

struct worker {
  pthread_t thread;
  unsigned index;
  uint64_t units;
  uint64_t cpu_ns;
  uint64_t end_ns;
  uint64_t sink;
  char pad[64];
};

static struct worker workers[MAX_THREADS];
static pthread_barrier_t go_barrier;
static uint64_t deadline_ns;

static uint64_t clock_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static uint64_t xorshift(uint64_t* state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

FRAME int compare_keys(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

FRAME uint64_t sort_phase(uint64_t seed) {
  uint64_t keys[KEYS];
  for (unsigned i = 0; i < KEYS; ++i) keys[i] = xorshift(&seed);
  qsort(keys, KEYS, sizeof keys[0], compare_keys);
  return keys[0] ^ keys[KEYS / 2] ^ keys[KEYS - 1];
}

FRAME uint64_t mix_block(uint64_t value) {
  for (unsigned i = 0; i < 64; ++i) value = (value ^ (value >> 29)) * UINT64_C(0xbf58476d1ce4e5b9) + i;
  return value;
}

FRAME uint64_t hash_tree(uint64_t value, unsigned depth) {
  if (depth == 0) return mix_block(value);
  const uint64_t left = hash_tree(value * 3 + 1, depth - 1);
  const uint64_t right = depth > 3 ? hash_tree(value * 5 + 2, depth - 1) : value;
  return (left ^ (right << 1)) + depth; /* after both calls: no tail call */
}

FRAME uint64_t hash_phase(uint64_t seed) {
  return hash_tree(seed, TREE_DEPTH) + 1;
}

FRAME uint64_t format_phase(uint64_t seed) {
  char line[160];
  uint64_t sum = 0;
  for (unsigned i = 0; i < 8; ++i) {
    const int n = snprintf(line, sizeof line, "%016" PRIx64 " %" PRIu64 " %.3f %s", seed, seed % 100003,
                           (double)(seed % 9973) / 7.0, i & 1 ? "odd" : "even");
    sum += (uint64_t)n + (uint8_t)line[i];
    seed = seed * 6364136223846793005u + 1442695040888963407u;
  }
  return sum;
}

FRAME uint64_t do_unit(uint64_t seed) {
  uint64_t result = sort_phase(seed);
  result ^= hash_phase(seed + result);
  result += format_phase(result);
  return result;
}

FRAME void run_units(struct worker* worker) {
  uint64_t seed = 0x9e3779b97f4a7c15u * (worker->index + 1);
  const uint64_t cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t units = 0, now;
  do {
    seed = do_unit(seed) | 1;
    ++units;
    now = clock_ns(CLOCK_MONOTONIC);
  } while (now < deadline_ns);
  worker->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  worker->end_ns = now;
  worker->units = units;
  worker->sink = seed;
}

FRAME void* worker_main(void* arg) {
  struct worker* worker = arg;
  pthread_barrier_wait(&go_barrier);
  run_units(worker);
  return NULL;
}

static unsigned parse_unsigned(const char* text, const char* what, unsigned low, unsigned high) {
  char* end = NULL;
  const unsigned long value = strtoul(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) {
    fprintf(stderr, "profile_workload: %s must be %u..%u, not %s\n", what, low, high, text);
    exit(2);
  }
  return (unsigned)value;
}

int main(int argc, char** argv) {
  unsigned threads = 2, seconds = 5;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = parse_unsigned(argv[++i], "--threads", 1, MAX_THREADS);
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = parse_unsigned(argv[++i], "--seconds", 1, 3600);
    } else {
      fprintf(stderr, "usage: profile_workload [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  pthread_barrier_init(&go_barrier, NULL, threads);
  for (unsigned i = 1; i < threads; ++i) {
    workers[i].index = i;
    if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
      fprintf(stderr, "profile_workload: pthread_create failed\n");
      return 1;
    }
  }
  printf("pid %d\nthreads %u\nready\n", (int)getpid(), threads);
  fflush(stdout);
  char go;
  if (read(STDIN_FILENO, &go, 1) != 1) {
    printf("units_total 0\n");
    return 0;
  }
  const uint64_t start_ns = clock_ns(CLOCK_MONOTONIC);
  deadline_ns = start_ns + (uint64_t)seconds * 1000000000u;
  pthread_barrier_wait(&go_barrier);
  run_units(&workers[0]);
  uint64_t units = workers[0].units, cpu_ns = workers[0].cpu_ns, end_ns = workers[0].end_ns;
  for (unsigned i = 1; i < threads; ++i) {
    pthread_join(workers[i].thread, NULL);
    units += workers[i].units;
    cpu_ns += workers[i].cpu_ns;
    if (workers[i].end_ns > end_ns) end_ns = workers[i].end_ns;
  }
  const uint64_t wall_ns = end_ns - start_ns;
  printf("units_total %" PRIu64 "\nwall_ns %" PRIu64 "\nunits_per_s %.1f\ncpu_ns %" PRIu64 "\nunits_per_cpu_s %.1f\n",
         units, wall_ns, (double)units * 1e9 / (double)wall_ns, cpu_ns, (double)units * 1e9 / (double)cpu_ns);
  for (unsigned i = 0; i < threads; ++i) {
    printf("thread %u units %" PRIu64 " cpu_ns %" PRIu64 "\n", i, workers[i].units, workers[i].cpu_ns);
  }
  printf("done\n");
  fflush(stdout);
  while (read(STDIN_FILENO, &go, 1) > 0) {
  }
  return 0;
}
