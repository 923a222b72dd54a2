/* sample_service: a small, deterministic, multi-threaded process for the
   end-to-end tests and the README demo to attach to.

   Each worker thread loops over requests; every request runs the same tree
   of traced functions with arguments derived only from the request number:

     handle_request(r)
       validate(r)
       price_order(asset, amount)
         apply_fee(subtotal, fee_bps)
       route_even(id, total) | route_odd(id, total)   (by request id parity)
       settle(3) -> settle(2) -> settle(1) -> settle(0)

   At start it prints the ground truth the tests compare against, then
   "ready":
     func NAME 0xADDR      live address of each traced function
     marker 0xADDR         sample_marker[] in .data
     heap_pattern 0xADDR   heap block: kHeapPattern, &handle_request, heap pointer

   --record PATH appends, per request and in call order, one line per traced
   call: "TID REQ_ID FUNC ARG..." with TID the kernel thread id (what eBPF
   sees) and each ARG the raw 64-bit argument value in hex, as a tracer reads
   it from its register. A request's lines are written together.

   --log PATH appends "request ID asset A amount M" to PATH (one write(2)
   per line, O_APPEND) just before each request is handled: a log a tracer
   can follow with --mark-file. --rotate-log-every N renames PATH to PATH.1
   (replacing it) and starts a new PATH after every N lines, as logrotate
   does.

   SIGTERM and SIGINT stop the workers after their current request; the
   process then exits with status 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every traced function keeps its own symbol, its declared signature and
   its call sites: noinline alone still lets GCC clone (".constprop"),
   specialize or merge identical functions, which would change the names and
   arguments a tracer sees. noipa rules all of that out. */
#if defined(__clang__)
#define TRACED __attribute__((noinline, used))
#else
#define TRACED __attribute__((noipa, used))
#endif

#define SETTLE_DEPTH 3
#define FEE_BPS 25
#define REQUEST_ID_STRIDE 1000000000ull /* worker k's ids start at k * stride */

/* Distinct, recognizable values for memory-scan tests. */
static volatile uint64_t sample_marker[4] __attribute__((used)) = {
    0x1122334455667788ull, 0x99aabbccddeeff00ull, 0x0123456789abcdefull, 0xfedcba9876543210ull};

static const uint64_t kHeapPattern = 0x5eed5eedc0ffee11ull;

struct heap_block {
  uint64_t pattern;      /* kHeapPattern */
  uint64_t function;     /* (uintptr_t)&handle_request */
  uint64_t heap_pointer; /* address of `payload`, another heap allocation */
};

/* Kept reachable from a global so the stores into it are not optimized away. */
static struct heap_block *volatile heap_block_ptr __attribute__((used));

struct request {
  uint64_t id;
  uint64_t asset;  /* 1..4 */
  uint64_t amount; /* 100..500 */
};

static volatile sig_atomic_t stop_requested;

/* --- recording --------------------------------------------------------- */

static FILE *record_file;
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;

/* The current request's lines; flushed as one block so concurrent workers
   never interleave inside a request. */
static __thread char record_buffer[1024];
static __thread size_t record_length;
static __thread uint64_t current_request_id;

static void record_call(const char *function, int argc, uint64_t a0, uint64_t a1) {
  if (!record_file) return;
  size_t room = sizeof record_buffer - record_length;
  int written;
  if (argc == 1) {
    written = snprintf(record_buffer + record_length, room, "%d %" PRIu64 " %s 0x%" PRIx64 "\n",
                       gettid(), current_request_id, function, a0);
  } else {
    written = snprintf(record_buffer + record_length, room,
                       "%d %" PRIu64 " %s 0x%" PRIx64 " 0x%" PRIx64 "\n", gettid(),
                       current_request_id, function, a0, a1);
  }
  if (written > 0 && (size_t)written < room) record_length += (size_t)written;
}

static void flush_request_record(void) {
  if (!record_file || record_length == 0) return;
  pthread_mutex_lock(&record_lock);
  fwrite(record_buffer, 1, record_length, record_file);
  fflush(record_file);
  pthread_mutex_unlock(&record_lock);
  record_length = 0;
}

/* --- the log ----------------------------------------------------------- */

static const char *log_path;
static uint64_t rotate_log_every; /* 0: never */
static int log_fd = -1;
static uint64_t log_lines;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static int open_log(void) {
  log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  return log_fd >= 0;
}

static void log_request(const struct request *r) {
  if (!log_path) return;
  char line[128];
  int length = snprintf(line, sizeof line, "request %" PRIu64 " asset %" PRIu64 " amount %" PRIu64 "\n", r->id,
                        r->asset, r->amount);
  pthread_mutex_lock(&log_lock);
  if (rotate_log_every > 0 && log_lines > 0 && log_lines % rotate_log_every == 0) {
    char rotated[4096];
    snprintf(rotated, sizeof rotated, "%s.1", log_path);
    close(log_fd);
    if (rename(log_path, rotated) != 0 || !open_log()) perror("sample_service: rotating --log");
  }
  if (log_fd >= 0 && write(log_fd, line, (size_t)length) != length) perror("sample_service: --log");
  ++log_lines;
  pthread_mutex_unlock(&log_lock);
}

/* --- the traced call tree ---------------------------------------------- */

TRACED int validate(const struct request *r) {
  record_call("validate", 1, (uint64_t)(uintptr_t)r, 0);
  return r->asset >= 1 && r->asset <= 4 && r->amount > 0;
}

TRACED uint64_t apply_fee(uint64_t subtotal, uint64_t fee_bps) {
  record_call("apply_fee", 2, subtotal, fee_bps);
  return subtotal + subtotal * fee_bps / 10000;
}

TRACED uint64_t price_order(uint64_t asset, uint64_t amount) {
  static const uint64_t unit_price[5] = {0, 250, 1000, 40, 7};
  record_call("price_order", 2, asset, amount);
  return apply_fee(amount * unit_price[asset], FEE_BPS);
}

TRACED uint64_t route_even(uint64_t id, uint64_t total) {
  record_call("route_even", 2, id, total);
  return total + (id & 0xff);
}

TRACED uint64_t route_odd(uint64_t id, uint64_t total) {
  record_call("route_odd", 2, id, total);
  return total ^ (id << 3);
}

TRACED uint64_t settle(uint64_t depth) {
  record_call("settle", 1, depth, 0);
  if (depth == 0) return 1;
  uint64_t below = settle(depth - 1);
  /* Work after the call keeps it a real recursive call (not a loop or a
     tail call), so each level has its own frame and return. */
  __asm__ volatile("" ::: "memory");
  return below * 3 + depth;
}

/* A function that begins like code built with -fcf-protection and
   -mnop-mcount: endbr64, then a 5-byte nop (0f 1f 44 00 00). A tracer can
   put its entry probe on the nop, which the kernel runs as a call instead of
   an int3 trap. Returns its argument plus one. */
__asm__(".text\n"
        ".globl nop_entry\n"
        ".type nop_entry, @function\n"
        "nop_entry:\n"
        "  endbr64\n"
        "  .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
        "  lea 1(%rdi), %rax\n"
        "  ret\n"
        ".size nop_entry, .-nop_entry\n");
uint64_t nop_entry(uint64_t value);

/* Routing goes through a table, so handle_request makes one indirect call
   (`call *...`) whose target a tracer must name at run time. volatile keeps
   the compiler from turning it back into direct calls. */
typedef uint64_t (*route_fn)(uint64_t, uint64_t);
static route_fn const volatile routes[2] = {route_even, route_odd};

TRACED uint64_t handle_request(struct request *r) {
  record_call("handle_request", 1, (uint64_t)(uintptr_t)r, 0);
  if (!validate(r)) return 0;
  uint64_t total = price_order(r->asset, r->amount);
  total = routes[r->id & 1](r->id, total);
  total += nop_entry(r->id) - r->id - 1; /* adds nothing; exists to be traced */
  return total + settle(SETTLE_DEPTH);
}

/* The order the "func" lines are printed in. */
static const struct {
  const char *name;
  void (*address)(void);
} traced_functions[] = {
    {"handle_request", (void (*)(void))handle_request},
    {"validate", (void (*)(void))validate},
    {"price_order", (void (*)(void))price_order},
    {"apply_fee", (void (*)(void))apply_fee},
    {"route_even", (void (*)(void))route_even},
    {"route_odd", (void (*)(void))route_odd},
    {"settle", (void (*)(void))settle},
};

/* --- workers ------------------------------------------------------------ */

struct options {
  unsigned threads;
  uint64_t requests;    /* per thread; 0 = until signalled */
  uint64_t interval_us; /* sleep between requests */
  const char *record_path;
};

struct worker {
  pthread_t thread;
  unsigned index;
  const struct options *options;
};

static volatile uint64_t result_sink; /* consumes results so calls are not dropped */

/* Sleeps in slices of at most 10 ms: workers block the stop signals, so a
   long interval would otherwise delay shutdown by up to a whole interval. */
static void sleep_us(uint64_t us) {
  while (us > 0 && !stop_requested) {
    uint64_t slice = us < 10000 ? us : 10000;
    struct timespec ts = {0, (long)slice * 1000};
    nanosleep(&ts, NULL);
    us -= slice;
  }
}

static void *worker_main(void *arg) {
  const struct worker *self = arg;
  const struct options *options = self->options;
  for (uint64_t n = 0; !stop_requested && (options->requests == 0 || n < options->requests); ++n) {
    struct request request = {
        .id = self->index * REQUEST_ID_STRIDE + n,
        .asset = 1 + n % 4,
        .amount = 100 * (1 + n % 5),
    };
    current_request_id = request.id;
    log_request(&request);
    result_sink = handle_request(&request);
    flush_request_record();
    sleep_us(options->interval_us);
  }
  return NULL;
}

/* --- startup ------------------------------------------------------------ */

static void on_stop_signal(int signo) {
  (void)signo;
  stop_requested = 1;
}

static int parse_count(const char *text, uint64_t *out) {
  if (!text || !*text || *text == '-') return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = value;
  return 1;
}

static int parse_options(int argc, char **argv, struct options *options) {
  options->threads = 2;
  options->requests = 0;
  options->interval_us = 1000;
  options->record_path = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t number = 0;
    if (strcmp(flag, "--threads") == 0 && parse_count(value, &number) && number >= 1 &&
        number <= 64) {
      options->threads = (unsigned)number;
    } else if (strcmp(flag, "--requests") == 0 && parse_count(value, &number)) {
      options->requests = number;
    } else if (strcmp(flag, "--interval-us") == 0 && parse_count(value, &number)) {
      options->interval_us = number;
    } else if (strcmp(flag, "--record") == 0 && value) {
      options->record_path = value;
    } else if (strcmp(flag, "--log") == 0 && value) {
      log_path = value;
    } else if (strcmp(flag, "--rotate-log-every") == 0 && parse_count(value, &number)) {
      rotate_log_every = number;
    } else {
      fprintf(stderr, "sample_service: bad argument '%s'\n", flag);
      return 0;
    }
    ++i;
  }
  return 1;
}

static void setup_heap_block(void) {
  /* Allocated before any thread exists, so both blocks come from the main
     arena and the pointer really points into the [heap] mapping. */
  uint64_t *payload = malloc(64);
  struct heap_block *block = malloc(sizeof *block);
  if (!payload || !block) {
    perror("sample_service: malloc");
    exit(1);
  }
  memset(payload, 0xab, 64);
  block->pattern = kHeapPattern;
  block->function = (uint64_t)(uintptr_t)handle_request;
  block->heap_pointer = (uint64_t)(uintptr_t)payload;
  heap_block_ptr = block;
}

int main(int argc, char **argv) {
  struct options options;
  if (!parse_options(argc, argv, &options)) {
    fprintf(stderr,
            "usage: sample_service [--threads N] [--requests N (0 = forever)] [--interval-us N] "
            "[--record PATH] [--log PATH [--rotate-log-every N]]\n");
    return 2;
  }
  if (options.record_path) {
    record_file = fopen(options.record_path, "a");
    if (!record_file) {
      perror("sample_service: --record");
      return 1;
    }
  }

  if (log_path && !open_log()) {
    perror("sample_service: --log");
    return 1;
  }

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, NULL);
  sigaction(SIGINT, &action, NULL);

  setup_heap_block();
  for (size_t i = 0; i < sizeof traced_functions / sizeof traced_functions[0]; ++i) {
    printf("func %s 0x%" PRIxPTR "\n", traced_functions[i].name,
           (uintptr_t)traced_functions[i].address);
  }
  printf("marker 0x%" PRIxPTR "\n", (uintptr_t)sample_marker);
  printf("heap_pattern 0x%" PRIxPTR "\n", (uintptr_t)heap_block_ptr);
  printf("ready\n");
  fflush(stdout);

  /* Workers block the stop signals so they land on the main thread, whose
     handler only sets the flag the workers poll. */
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  struct worker *workers = calloc(options.threads, sizeof *workers);
  if (!workers) return 1;
  for (unsigned i = 0; i < options.threads; ++i) {
    workers[i].index = i;
    workers[i].options = &options;
    if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
      fprintf(stderr, "sample_service: pthread_create failed\n");
      return 1;
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, NULL);

  for (unsigned i = 0; i < options.threads; ++i) pthread_join(workers[i].thread, NULL);
  free(workers);
  if (record_file) fclose(record_file);
  return 0;
}
