// trace_target: the ground-truth process for the trace tests.
//
// Worker threads loop over requests. Every request runs a fixed tree of
// traced functions (namespace svc, real C++ mangled names) whose shape and
// values depend only on the request, and the process records, per thread and
// request, exactly which traced functions it entered and left, in order.
//
//   handle_request(r)                           window start; r: Request*
//     validate(id, amount)
//     exit_now(id)                              only for --exit-in-request ID
//     compute_price(asset, amount)
//       apply_fee(price, kFeeBps)
//     settle(1 + id % 3) -> settle(d - 1) -> ... -> settle(0)   real recursion
//     risky(id) -> risky_inner(id) throws       id % 5 == 3: both frames are
//     recover(id)                                 left by unwinding; caught in
//                                                 handle_request, then recover
//     forward(id) ~> finish(id)                 id % 4 == 1: `jmp finish`, a
//                                                 real tail call; forward has no ret
//     rendezvous(id)                            --overlap: all workers meet here
//     tick(0) ... tick(N - 1)                   --burst N
//
// Return values (what a `ret=%ax` fetch reads; all uint64_t):
//   validate(id, amount)       = amount != 0 && amount <= kMaxAmount && id <= kMaxId  (always 1 here)
//   apply_fee(price, bps)      = price + price * bps / 10000
//   compute_price(asset, amt)  = apply_fee(amt * kUnitPrice[asset], kFeeBps) + asset
//   settle(d)                  = d == 0 ? 1 : settle(d - 1) * 3 + d
//   risky_inner(id)            = throws std::runtime_error when id % 5 == 3, else id * 2 + 1
//   risky(id)                  = risky_inner(id) + 1           (never returns here)
//   recover(id)                = id ^ 0x5a5a
//   finish(x)                  = x * 7 + 3, also what forward "returns" (via finish's ret)
//   rendezvous(id)             = id + 0x1000
//   tick(i)                    = i * 2 + 1
//   handle_request(r)          = validate == 0 ? 0 : the sum of the return values of
//                                every other direct callee that returned (compute_price,
//                                settle, recover, forward, rendezvous, each tick)
//   exit_now(id)               never returns (_exit(0))
//
// Requests of worker w (0-based), n = 0, 1, ...:
//   id = w * 1000000 + n, asset = 1 + n % 4, amount = 100 + 37 * (n % 11),
//   flags = kFlagRisky | kFlagForward | kFlagRendezvous | kFlagExit as they apply.
//
// Startup lines on stdout (then flushed): "func NAME 0xLIVEADDR" for every
// traced function, "pid N" (decimal), "ready".
//
// --record PATH (opened O_APPEND, never truncated): one line per event,
//   TID REQ_ID > FUNC ARG...     entry; each argument register value as 0x-hex
//   TID REQ_ID < FUNC RET        return through a ret instruction
//   TID REQ_ID ! FUNC            frame left by exception unwinding
//   TID REQ_ID ~ FUNC            frame left by a tail jump; the callee's "> "
//                                line follows and its ret returns to FUNC's caller
// TID is gettid(), REQ_ID decimal, FUNC the unqualified name. A request's
// lines are built in memory and appended with one write() when it ends; a
// request cut by --exit-in-request is written by exit_now before _exit(0).
// Recording is done by untraced helpers, so it never adds or removes a
// traced call.
//
// SIGTERM/SIGINT: every worker finishes its current request, the process
// exits 0. With --overlap the stop is decided at the barrier, once for all
// workers, so every worker runs the same number of requests.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

// Every traced function keeps its own symbol, its declared signature and its
// call sites: noipa rules out inlining, cloning (.constprop/.isra), IPA-based
// return-value and argument assumptions, and identical-code folding. The
// build uses -fno-optimize-sibling-calls, so every call in a traced function
// is a real call; TAIL_CALLER turns sibling calls back on for forward alone.
#if defined(__clang__)
#define TRACED __attribute__((noinline, used))
#define TAIL_CALLER __attribute__((noinline, used))
#define TAIL_RETURN [[clang::musttail]] return
#else
#define TRACED __attribute__((noipa, used))
#define TAIL_CALLER __attribute__((noipa, used, optimize("optimize-sibling-calls")))
#define TAIL_RETURN return
#endif

namespace {

constexpr uint64_t kRequestIdStride = 1000000;  // worker w's ids start at w * stride
constexpr uint64_t kFeeBps = 25;
constexpr uint64_t kMaxAmount = 1000000;
constexpr uint64_t kMaxId = uint64_t{1} << 48;
constexpr uint64_t kUnitPrice[5] = {0, 250, 1000, 40, 7};

constexpr uint64_t kFlagRisky = 1;       // id % 5 == 3: risky/risky_inner throw, recover
constexpr uint64_t kFlagForward = 2;     // id % 4 == 1: forward tail-calls finish
constexpr uint64_t kFlagRendezvous = 4;  // --overlap
constexpr uint64_t kFlagExit = 8;        // --exit-in-request ID

struct Options {
  unsigned threads = 1;
  uint64_t requests = 0;  // per thread; 0 = until signalled
  uint64_t interval_us = 1000;
  uint64_t first_delay_ms = 0;
  const char* go_file = nullptr;  // --go-file: start requests once this file exists
  uint64_t burst = 0;
  bool overlap = false;
  bool exit_in_request = false;
  uint64_t exit_request_id = 0;
  const char* record_path = nullptr;
};

Options options;
std::atomic<bool> stop_requested{false};

// --- recording (untraced) ---------------------------------------------------

int record_fd = -1;
thread_local pid_t thread_id;
thread_local uint64_t current_request;
thread_local std::string record_lines;  // the current request's lines
// Traced frames entered and not yet left, innermost last: what the unwinding
// lines are derived from, so they name exactly the frames a throw left.
thread_local std::vector<const char*> open_frames;

__attribute__((noinline)) void record_line(char kind, const char* function, int count, uint64_t a0, uint64_t a1) {
  if (record_fd < 0) return;
  char line[160];
  int length = snprintf(line, sizeof line, "%d %" PRIu64 " %c %s", static_cast<int>(thread_id), current_request,
                        kind, function);
  const uint64_t values[2] = {a0, a1};
  for (int i = 0; i < count && length > 0 && static_cast<size_t>(length) < sizeof line; ++i) {
    length += snprintf(line + length, sizeof line - static_cast<size_t>(length), " 0x%" PRIx64, values[i]);
  }
  if (length <= 0 || static_cast<size_t>(length) >= sizeof line - 1) abort();
  line[length++] = '\n';
  record_lines.append(line, static_cast<size_t>(length));
}

__attribute__((noinline)) void record_entry(const char* function, uint64_t a0) {
  open_frames.push_back(function);
  record_line('>', function, 1, a0, 0);
}

__attribute__((noinline)) void record_entry(const char* function, uint64_t a0, uint64_t a1) {
  open_frames.push_back(function);
  record_line('>', function, 2, a0, a1);
}

// Called right before the function's `return`, i.e. before its ret runs.
__attribute__((noinline)) void record_return(const char* function, uint64_t value) {
  if (open_frames.empty() || strcmp(open_frames.back(), function) != 0) abort();
  open_frames.pop_back();
  record_line('<', function, 1, value, 0);
}

// Called right before a tail jump: the frame is replaced by the callee's.
__attribute__((noinline)) void record_tail_exit(const char* function) {
  if (open_frames.empty() || strcmp(open_frames.back(), function) != 0) abort();
  open_frames.pop_back();
  record_line('~', function, 0, 0, 0);
}

__attribute__((noinline)) size_t open_depth() { return open_frames.size(); }

// Called in a catch handler: every frame above the catching one was unwound.
__attribute__((noinline)) void record_unwound_to(size_t depth) {
  while (open_frames.size() > depth) {
    record_line('!', open_frames.back(), 0, 0, 0);
    open_frames.pop_back();
  }
}

// One write() per request; O_APPEND keeps requests of different threads whole.
// The lock keeps a write from being cut short by another thread's _exit
// (exit_now holds it until the process is gone).
pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void flush_record() {
  if (record_fd >= 0 && !record_lines.empty()) {
    pthread_mutex_lock(&record_lock);
    const char* data = record_lines.data();
    size_t left = record_lines.size();
    while (left > 0) {
      const ssize_t written = write(record_fd, data, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) break;
      data += written;
      left -= static_cast<size_t>(written);
    }
    pthread_mutex_unlock(&record_lock);
  }
  record_lines.clear();
}

// Writes the cut request and ends the process while no other request is
// being written.
[[noreturn]] __attribute__((noinline)) void flush_record_and_exit() {
  flush_record();
  pthread_mutex_lock(&record_lock);
  _exit(0);
}

// --- overlap rendezvous (untraced) -------------------------------------------

pthread_barrier_t round_barrier;
bool round_continues = true;            // written by the serial thread between the two waits
thread_local bool worker_continues = true;  // this round's decision, same for every worker

// Two waits: after the first every worker is inside handle_request (this is
// the overlap), the serial thread decides whether another round runs; the
// second publishes the decision to all workers.
__attribute__((noinline)) void meet_other_workers() {
  if (pthread_barrier_wait(&round_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
    round_continues = !stop_requested.load();
  }
  pthread_barrier_wait(&round_barrier);
  worker_continues = round_continues;
}

}  // namespace

// --- the traced functions ----------------------------------------------------

namespace svc {

struct Request {
  uint64_t id;      // +0
  uint64_t asset;   // +8
  uint64_t amount;  // +16
  uint64_t flags;   // +24: kFlag* bits
};

TRACED uint64_t validate(uint64_t id, uint64_t amount) {
  record_entry("validate", id, amount);
  const uint64_t ok = amount != 0 && amount <= kMaxAmount && id <= kMaxId ? 1 : 0;
  record_return("validate", ok);
  return ok;
}

TRACED void exit_now(uint64_t id) {
  record_entry("exit_now", id);
  flush_record_and_exit();
}

TRACED uint64_t apply_fee(uint64_t price, uint64_t bps) {
  record_entry("apply_fee", price, bps);
  const uint64_t result = price + price * bps / 10000;
  record_return("apply_fee", result);
  return result;
}

TRACED uint64_t compute_price(uint64_t asset, uint64_t amount) {
  record_entry("compute_price", asset, amount);
  const uint64_t result = apply_fee(amount * kUnitPrice[asset % 5], kFeeBps) + asset;
  record_return("compute_price", result);
  return result;
}

TRACED uint64_t settle(uint64_t depth) {
  record_entry("settle", depth);
  uint64_t result = 1;
  // Work after the call (and no sibling calls in this build) keeps each level
  // a real call with its own frame and ret, not a loop or a jump.
  if (depth != 0) result = settle(depth - 1) * 3 + depth;
  record_return("settle", result);
  return result;
}

TRACED uint64_t risky_inner(uint64_t id) {
  record_entry("risky_inner", id);
  if (id % 5 == 3) throw std::runtime_error("risky_inner failed");
  const uint64_t result = id * 2 + 1;
  record_return("risky_inner", result);
  return result;
}

// No handler and nothing to clean up: the exception passes straight through.
TRACED uint64_t risky(uint64_t id) {
  record_entry("risky", id);
  const uint64_t result = risky_inner(id) + 1;
  record_return("risky", result);
  return result;
}

TRACED uint64_t recover(uint64_t id) {
  record_entry("recover", id);
  const uint64_t result = id ^ 0x5a5a;
  record_return("recover", result);
  return result;
}

TRACED uint64_t finish(uint64_t x) {
  record_entry("finish", x);
  const uint64_t result = x * 7 + 3;
  record_return("finish", result);
  return result;
}

// Ends in `jmp finish` (checked by the trace_target_codegen test): forward's
// frame is gone before finish runs, and finish's ret returns to forward's caller.
TAIL_CALLER uint64_t forward(uint64_t x) {
  record_entry("forward", x);
  record_tail_exit("forward");
  TAIL_RETURN finish(x);
}

TRACED uint64_t rendezvous(uint64_t id) {
  record_entry("rendezvous", id);
  meet_other_workers();
  const uint64_t result = id + 0x1000;
  record_return("rendezvous", result);
  return result;
}

TRACED uint64_t tick(uint64_t i) {
  record_entry("tick", i);
  const uint64_t result = i * 2 + 1;
  record_return("tick", result);
  return result;
}

TRACED uint64_t handle_request(Request* r) {
  record_entry("handle_request", reinterpret_cast<uintptr_t>(r));
  if (validate(r->id, r->amount) == 0) {
    record_return("handle_request", 0);
    return 0;
  }
  if (r->flags & kFlagExit) exit_now(r->id);
  uint64_t total = compute_price(r->asset, r->amount);
  total += settle(1 + r->id % 3);
  if (r->flags & kFlagRisky) {
    const size_t depth = open_depth();
    try {
      total += risky(r->id);
    } catch (const std::runtime_error&) {
      record_unwound_to(depth);
      total += recover(r->id);
    }
  }
  if (r->flags & kFlagForward) total += forward(r->id);
  if (r->flags & kFlagRendezvous) total += rendezvous(r->id);
  for (uint64_t i = 0; i < options.burst; ++i) total += tick(i);
  record_return("handle_request", total);
  return total;
}

}  // namespace svc

namespace {

// The order the "func" lines are printed in.
struct TracedFunction {
  const char* name;
  uintptr_t address;
};
const TracedFunction kTracedFunctions[] = {
    {"handle_request", reinterpret_cast<uintptr_t>(&svc::handle_request)},
    {"validate", reinterpret_cast<uintptr_t>(&svc::validate)},
    {"exit_now", reinterpret_cast<uintptr_t>(&svc::exit_now)},
    {"compute_price", reinterpret_cast<uintptr_t>(&svc::compute_price)},
    {"apply_fee", reinterpret_cast<uintptr_t>(&svc::apply_fee)},
    {"settle", reinterpret_cast<uintptr_t>(&svc::settle)},
    {"risky", reinterpret_cast<uintptr_t>(&svc::risky)},
    {"risky_inner", reinterpret_cast<uintptr_t>(&svc::risky_inner)},
    {"recover", reinterpret_cast<uintptr_t>(&svc::recover)},
    {"forward", reinterpret_cast<uintptr_t>(&svc::forward)},
    {"finish", reinterpret_cast<uintptr_t>(&svc::finish)},
    {"rendezvous", reinterpret_cast<uintptr_t>(&svc::rendezvous)},
    {"tick", reinterpret_cast<uintptr_t>(&svc::tick)},
};

volatile uint64_t result_sink;  // consumes results so no call is dropped

// Sleeps in slices of at most 10 ms so a stop request is noticed promptly.
void sleep_us(uint64_t us) {
  while (us > 0 && !stop_requested.load()) {
    const uint64_t slice = us < 10000 ? us : 10000;
    timespec ts{0, static_cast<long>(slice * 1000)};
    nanosleep(&ts, nullptr);
    us -= slice;
  }
}

void* worker_main(void* arg) {
  const uint64_t worker = reinterpret_cast<uintptr_t>(arg);
  thread_id = gettid();
  for (uint64_t n = 0; options.requests == 0 || n < options.requests; ++n) {
    // With --overlap the barrier decides (for all workers alike) instead.
    if (!options.overlap && stop_requested.load()) break;
    svc::Request request{};
    request.id = worker * kRequestIdStride + n;
    request.asset = 1 + n % 4;
    request.amount = 100 + 37 * (n % 11);
    request.flags = (request.id % 5 == 3 ? kFlagRisky : 0) | (request.id % 4 == 1 ? kFlagForward : 0) |
                    (options.overlap ? kFlagRendezvous : 0) |
                    (options.exit_in_request && request.id == options.exit_request_id ? kFlagExit : 0);
    current_request = request.id;
    result_sink = svc::handle_request(&request);
    flush_record();
    if (options.overlap && !worker_continues) break;
    sleep_us(options.interval_us);
  }
  return nullptr;
}

void on_stop_signal(int) { stop_requested.store(true); }

bool parse_count(const char* text, uint64_t* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = value;
  return true;
}

bool parse_options(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--overlap") {
      options.overlap = true;
      continue;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    uint64_t number = 0;
    if (flag == "--record" && value != nullptr) {
      options.record_path = value;
    } else if (flag == "--go-file" && value != nullptr) {
      options.go_file = value;
    } else if (!parse_count(value, &number)) {
      return false;
    } else if (flag == "--threads" && number >= 1 && number <= 64) {
      options.threads = static_cast<unsigned>(number);
    } else if (flag == "--requests") {
      options.requests = number;
    } else if (flag == "--interval-us") {
      options.interval_us = number;
    } else if (flag == "--first-delay-ms" && number <= 3600 * 1000) {
      options.first_delay_ms = number;
    } else if (flag == "--burst") {
      options.burst = number;
    } else if (flag == "--exit-in-request") {
      options.exit_in_request = true;
      options.exit_request_id = number;
    } else {
      return false;
    }
    ++i;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse_options(argc, argv)) {
    fprintf(stderr,
            "usage: trace_target [--threads N (1-64, default 1)] [--requests N per thread (0 = forever, "
            "default)]\n"
            "                    [--interval-us N (default 1000)] [--first-delay-ms N (default 0)]\n"
            "                    [--record PATH] [--overlap] [--burst N] [--exit-in-request ID]\n"
            "                    [--go-file PATH (wait until it exists before the first request)]\n");
    return 2;
  }
  if (options.record_path != nullptr) {
    record_fd = open(options.record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (record_fd < 0) {
      perror("trace_target: --record");
      return 1;
    }
  }
  if (options.overlap && pthread_barrier_init(&round_barrier, nullptr, options.threads) != 0) {
    fprintf(stderr, "trace_target: pthread_barrier_init failed\n");
    return 1;
  }

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  for (const auto& function : kTracedFunctions) printf("func %s 0x%" PRIxPTR "\n", function.name, function.address);
  printf("pid %d\n", static_cast<int>(getpid()));
  printf("ready\n");
  fflush(stdout);

  // Tests create the go file once the tracer is attached, so no request
  // runs before the probes are in place, however slow the machine.
  while (options.go_file != nullptr && access(options.go_file, F_OK) != 0 && !stop_requested) sleep_us(5000);
  sleep_us(options.first_delay_ms * 1000);

  // Workers block the stop signals, so they land on the main thread, whose
  // handler only sets the flag the workers poll.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  std::vector<pthread_t> workers;
  if (!stop_requested.load()) {
    for (unsigned i = 0; i < options.threads; ++i) {
      pthread_t thread;
      if (pthread_create(&thread, nullptr, worker_main, reinterpret_cast<void*>(uintptr_t{i})) != 0) {
        fprintf(stderr, "trace_target: pthread_create failed\n");
        _exit(1);
      }
      workers.push_back(thread);
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);

  for (pthread_t thread : workers) pthread_join(thread, nullptr);
  if (record_fd >= 0) close(record_fd);
  return 0;
}
