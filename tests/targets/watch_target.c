// watch_target: the ground-truth process for the watch tests (`xref watch`).
//
// Worker threads write a fixed set of watched objects in rounds, and the
// process records, per thread, every write it makes to them after `go`: the
// bytes before and after, and the C function that executes the store (or
// calls memcpy/memset/read). The writes cover what a watcher must see:
//
//   g_total      uint64_t    lock xadd (total_fetch_add), lock add (total_add), xchg
//                            (total_exchange), lock cmpxchg (total_cas), a plain 8-byte
//                            mov (total_store); with --cas-miss also a failing lock
//                            cmpxchg, which writes the unchanged value back (old == new)
//   g_counts     int32_t[4]  g_counts[slot]++ (count_slot) and += through a pointer
//                            (count_add): one slot per thread, written without the lock
//                            while no other thread shares the slot
//   g_flag       uint8_t     a plain 1-byte mov (set_flag), a 1-byte xchg (flag_exchange);
//                            with --lock-bits also a 1-byte lock or and lock and (flag_bits)
//   g_config     struct config (144 bytes), always through a pointer argument: fields
//                            of 1/2/4/8 bytes and an |= (configure), a 16-byte struct copy
//                            (set_window: movups), an array element by index (set_weight),
//                            an array slot and a 2-byte ++ (push_history), a memcpy with a
//                            run-time length into the name (rename_config, via memcpy)
//   buf          256 bytes on the heap: a byte loop (fill_bytes), memcpy (copy_in) and
//                            memset (clear_range) with run-time lengths, both real libc
//                            calls; with --read-fd, read(2) from the target's own pipe
//                            (fill_from_pipe: a kernel write)
//   moving       a heap block that --realloc moves every K rounds (move_buffer: realloc,
//                            then the new pointer into moving_slot, then the new capacity
//                            into its length field); every round, its `writes` counter
//                            ++ and one data byte (stamp_moving)
//   moving_slot  the global pointer to `moving` (8 bytes)
//
// The `moving` block: tag[16] at 0 (written before ready only), uint64_t
// length at 16 (its capacity), uint64_t writes at 24, data bytes from 32.
// Its capacity starts at 64 and grows by 32 per move; the first 1024 moves
// really move (see move_buffer). Once moved away from, a block is libc's:
// realloc's free writes its own pointers into it, unrecorded, and the bytes
// past the old capacity in the new block are whatever malloc left there.
//
// Exactness: every record's OLD is what a watcher sees right before the
// store. Every write except count_slot/count_add runs inside one lock
// section per round (g_lock, not a watched object), and each section starts
// with a write to g_total, whose value only grows (every write adds at
// least 1, except the --cas-miss write, which leaves it equal): g_total's
// values order the sections of all threads. g_counts slots are owned by one
// thread each (with more than 4 writer threads they are written in the
// section too). Recording (note_write and friends) writes only thread-local
// memory and the record file, never a watched object, and with few stores
// of its own (libc formats and copies). Nothing but the writers above
// writes a watched object after go; before ready, main initializes them.
//
// Usage:
//   watch_target [--threads N] [--rounds N] [--interval-us N] [--go FILE]
//                [--record FILE] [--late-thread] [--realloc] [--realloc-every K]
//                [--read-fd] [--cas-miss] [--follow-delay-us N] [--exec-at-end FILE]
//                [--lock-bits]
//
//   --threads N         worker threads (1..16, default 2), created before ready
//   --rounds N          rounds per writer thread (default 20; 0: until SIGTERM/SIGINT)
//   --interval-us N     sleep between a thread's rounds (default 1000)
//   --go FILE           after ready, wait until FILE exists before any write
//   --record FILE       the record (opened O_APPEND, never truncated)
//   --late-thread       one more writer thread, created after go once a worker
//                       finished a round: a thread a watch did not see at attach
//   --realloc           move `moving` every 4 rounds of each thread (--realloc-every K)
//   --read-fd           read(2) into buf from a pipe the thread itself filled
//   --cas-miss          each round also runs a lock cmpxchg that fails (old == new)
//   --follow-delay-us N after moving `moving`, wait N us (lock held) before writing
//                       the new block's length: time for a --follow watch to re-arm
//   --lock-bits         each round also sets and clears bits of g_flag with lock or
//                       and lock and (their old value is not in any register after)
//   --exec-at-end FILE  after the exit lines, exec /bin/sh, which waits until FILE
//                       exists, then exits 0: the same PID, another program (a
//                       watch must see the exec, not an exit)
// Writer threads wait for each other after their last round (an exiting
// thread's malloc cache would give realloc room to grow in place).
// Bad arguments: a usage line on stderr, exit status 2.
//
// Startup lines on stdout (then flushed), before any write is recorded:
//   obj NAME 0xLIVEADDR SIZE     for g_total g_counts g_flag g_config buf moving
//                                moving_slot, in that order (SIZE decimal; moving's
//                                initial block and capacity)
//   thread workerW TID           for each worker W = 0..N-1
//   pid N
//   ready
// At exit (after every writer thread ended), on stdout:
//   thread late TID              with --late-thread (if it was started)
//   final NAME HEX               for every object: its bytes now (moving: the current
//                                block, its current capacity)
//
// The record, one line per write, a thread's round appended with one write():
//   TID SEQ OBJ OFFSET LEN OLD_HEX NEW_HEX FUNC [via memcpy|via memset|kernel read]
// TID: gettid(); SEQ: 1, 2, 3... per thread; OBJ: a name of the obj lines;
// OFFSET, LEN: decimal, bytes from the object's start (moving: from the
// current block's start); OLD_HEX, NEW_HEX: the LEN bytes before and after,
// two lowercase hex digits per byte in memory order; FUNC: the writer
// function. realloc's own copying into the new block is libc's, not recorded.
//
// SIGTERM/SIGINT: every writer thread finishes its current round, the
// process prints its exit lines and exits 0 (also while waiting for go).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// Writers keep their own symbol, signature and call sites (no inlining,
// cloning or IPA assumptions), so FUNC names the function whose code stores;
// so do the recorders, so no constant length turns their libc calls into
// inline stores.
#if defined(__clang__)
#define WRITER __attribute__((noinline, used))
#else
#define WRITER __attribute__((noipa, used))
#endif
#define RECORDER WRITER

// --- the watched objects -------------------------------------------------------

struct window {
  uint64_t start, end;
};

struct config {
  uint8_t mode;             // 0
  uint8_t level;            // 1
  uint16_t port;            // 2
  uint32_t flags;           // 4
  uint64_t limit;           // 8
  char name[32];            // 16
  struct window window;     // 48
  uint32_t weights[8];      // 64
  uint64_t history[4];      // 96
  uint16_t history_count;   // 128
  uint16_t reserved[3];     // 130
  uint64_t checksum;        // 136
};
_Static_assert(sizeof(struct config) == 144, "g_config is 144 bytes");

struct moving {
  char tag[16];      // 0
  uint64_t length;   // 16: the block's capacity, written after each move
  uint64_t writes;   // 24
  uint8_t data[];    // 32
};

enum { kBufSize = 256, kMovingStart = 64, kMovingStep = 32, kSlots = 4, kMaxThreads = 16 };

// Each on its own cache line, so no other variable shares an aligned slot
// with a watched object.
__attribute__((aligned(64))) uint64_t g_total;
__attribute__((aligned(64))) int32_t g_counts[kSlots];
__attribute__((aligned(64))) uint8_t g_flag;
__attribute__((aligned(64))) struct config g_config = {.mode = 1, .port = 8080, .limit = 100, .name = "watch"};
__attribute__((aligned(64))) uint8_t* buf;
__attribute__((aligned(64))) struct moving* moving_slot;

// --- options and process state (not watched) -------------------------------------

struct options {
  unsigned threads;
  uint64_t rounds;
  uint64_t interval_us;
  const char* go_file;
  const char* record_path;
  bool late_thread;
  uint64_t realloc_every;  // 0: no moves
  bool read_fd;
  bool cas_miss;
  uint64_t follow_delay_us;
  const char* exec_end_file;
  bool lock_bits;
};

static struct options options = {.threads = 2, .rounds = 20, .interval_us = 1000};
static volatile sig_atomic_t stop_requested;
static int go_flag;          // __atomic: writers may start
static int rounds_finished;  // __atomic: rounds finished by all threads
static int writers_done;     // __atomic: writer threads past their last round
static int writers_release;  // __atomic: main lets them exit
static int record_fd = -1;
static int pipe_fds[2] = {-1, -1};
static bool counts_locked;  // more writer threads than slots
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void* blockers[1024];  // allocations that keep realloc from growing in place
static size_t blocker_count;

// --- recording (writes no watched object) -----------------------------------------

struct recorder {
  pid_t tid;
  uint64_t seq;
  char* text;
  size_t length, capacity;
};

static __thread struct recorder rec;

// The recorder's own stores stay few: libc formats and copies (snprintf,
// memcpy with a run-time length), so a watch that probes every store of
// this binary pays for a handful of recorder stores per record, not one per
// byte.
static void append_text(const char* text, size_t length) {
  if (rec.length + length > rec.capacity) abort();  // flush_record runs before it can fill
  memcpy(rec.text + rec.length, text, length);
  rec.length += length;
}

static size_t format_hex(char* to, size_t room, const uint8_t* bytes, size_t length) {
  size_t n = 0;
  for (size_t i = 0; i < length && n + 2 < room; ++i) n += (size_t)snprintf(to + n, room - n, "%02x", bytes[i]);
  return n;
}

// Copies LENGTH bytes of a watched object into the caller's buffer (a read).
RECORDER void snapshot(uint8_t* to, const volatile uint8_t* from, size_t length) {
  memcpy(to, (const uint8_t*)from, length);
}

// One record line: OBJECT's bytes [offset, offset + length) were OLD and are
// now what `now` points at.
RECORDER void note_write(const char* object, size_t offset, size_t length, const void* old, const volatile void* now,
                         const char* function, const char* suffix) {
  if (record_fd < 0) return;
  uint8_t after[kBufSize];
  if (length > sizeof after) abort();
  snapshot(after, now, length);
  char line[4 * kBufSize + 256];
  size_t n = (size_t)snprintf(line, sizeof line, "%d %" PRIu64 " %s %zu %zu ", (int)rec.tid, ++rec.seq, object,
                              offset, length);
  n += format_hex(line + n, sizeof line - n, old, length);
  n += (size_t)snprintf(line + n, sizeof line - n, " ");
  n += format_hex(line + n, sizeof line - n, after, length);
  n += (size_t)snprintf(line + n, sizeof line - n, " %s%s%s\n", function, suffix != NULL ? " " : "",
                        suffix != NULL ? suffix : "");
  if (n >= sizeof line) abort();
  append_text(line, n);
}

// A write whose old and new values are known as integers (atomics return the old one).
RECORDER void note_value(const char* object, size_t offset, size_t length, uint64_t old, uint64_t now,
                         const char* function) {
  uint8_t old_bytes[8], new_bytes[8];
  memcpy(old_bytes, &old, 8);
  memcpy(new_bytes, &now, 8);
  if (record_fd < 0) return;
  if (length > 8) abort();
  // note_write reads the new bytes from memory; give it the value instead.
  note_write(object, offset, length, old_bytes, new_bytes, function, NULL);
}

// One write() per round; O_APPEND keeps rounds of different threads whole.
RECORDER void flush_record(void) {
  const char* data = rec.text;
  size_t left = rec.length;
  while (record_fd >= 0 && left > 0) {
    const ssize_t written = write(record_fd, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) abort();
    data += written;
    left -= (size_t)written;
  }
  rec.length = 0;
}

static size_t offset_in(const void* base, const volatile void* field) {
  return (size_t)((const volatile char*)field - (const char*)base);
}

// --- writers: g_total (every one adds at least 1, except a cas miss) ----------------

WRITER uint64_t total_fetch_add(uint64_t k) {
  const uint64_t old = __atomic_fetch_add(&g_total, k, __ATOMIC_SEQ_CST);  // lock xadd
  note_value("g_total", 0, 8, old, old + k, __func__);
  return old;
}

WRITER void total_add(uint64_t k) {
  const uint64_t old = __atomic_load_n(&g_total, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_total, k, __ATOMIC_SEQ_CST);  // lock add (result unused)
  note_write("g_total", 0, 8, &old, &g_total, __func__, NULL);
}

WRITER uint64_t total_exchange(uint64_t value) {
  const uint64_t old = __atomic_exchange_n(&g_total, value, __ATOMIC_SEQ_CST);  // xchg
  note_value("g_total", 0, 8, old, value, __func__);
  return old;
}

// lock cmpxchg writes either DESIRED (success) or the value it found (failure).
WRITER bool total_cas(uint64_t expected, uint64_t desired) {
  uint64_t seen = expected;
  const bool swapped = __atomic_compare_exchange_n(&g_total, &seen, desired, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST);
  note_value("g_total", 0, 8, seen, swapped ? desired : seen, __func__);
  return swapped;
}

WRITER void total_store(uint64_t value) {
  const uint64_t old = g_total;
  g_total = value;  // a plain 8-byte mov
  note_value("g_total", 0, 8, old, value, __func__);
}

// --- writers: g_counts, g_flag ------------------------------------------------------

WRITER void count_slot(unsigned slot) {
  int32_t old;
  snapshot((uint8_t*)&old, (const volatile uint8_t*)&g_counts[slot], sizeof old);
  g_counts[slot]++;  // after the call: a read-modify-write of memory
  note_write("g_counts", slot * sizeof(int32_t), sizeof(int32_t), &old, &g_counts[slot], __func__, NULL);
}

WRITER void count_add(int32_t* counter, int32_t k) {
  int32_t old;
  snapshot((uint8_t*)&old, (const volatile uint8_t*)counter, sizeof old);
  *counter += k;
  note_write("g_counts", offset_in(g_counts, counter), sizeof(int32_t), &old, counter, __func__, NULL);
}

WRITER void set_flag(uint8_t value) {
  const uint8_t old = g_flag;
  g_flag = value;  // a plain 1-byte mov
  note_write("g_flag", 0, 1, &old, &g_flag, __func__, NULL);
}

WRITER uint8_t flag_exchange(uint8_t value) {
  const uint8_t old = __atomic_exchange_n(&g_flag, value, __ATOMIC_SEQ_CST);  // xchg byte
  note_value("g_flag", 0, 1, old, value, __func__);
  return old;
}

// __atomic_fetch_or/and with the result unused: the compilers emit `lock
// or`/`lock and` on memory, which leave no copy of the old value.
WRITER void flag_bits(uint8_t set, uint8_t clear) {
  uint8_t old = g_flag;
  __atomic_fetch_or(&g_flag, set, __ATOMIC_SEQ_CST);
  note_write("g_flag", 0, 1, &old, &g_flag, __func__, NULL);
  old = g_flag;
  __atomic_fetch_and(&g_flag, (uint8_t)~clear, __ATOMIC_SEQ_CST);
  note_write("g_flag", 0, 1, &old, &g_flag, __func__, NULL);
}

// --- writers: g_config, always through a pointer ------------------------------------

#define NOTE_FIELD(config, field, old)                                                                   \
  note_write("g_config", offset_in(&g_config, &(config)->field), sizeof((config)->field), &(old),       \
             &(config)->field, __func__, NULL)

WRITER void configure(struct config* config, unsigned round) {
  const uint8_t old_mode = config->mode;
  config->mode = (uint8_t)(round % 3 + 1);
  NOTE_FIELD(config, mode, old_mode);
  const uint8_t old_level = config->level;
  config->level = (uint8_t)(round * 7);
  NOTE_FIELD(config, level, old_level);
  const uint16_t old_port = config->port;
  config->port = (uint16_t)(8000 + round);
  NOTE_FIELD(config, port, old_port);
  uint32_t old_flags;
  snapshot((uint8_t*)&old_flags, (const volatile uint8_t*)&config->flags, sizeof old_flags);
  config->flags |= 1u << (round % 32);
  NOTE_FIELD(config, flags, old_flags);
  const uint64_t old_limit = config->limit;
  config->limit = (uint64_t)round * 1000 + 1;
  NOTE_FIELD(config, limit, old_limit);
  const uint64_t old_checksum = config->checksum;
  config->checksum = old_checksum * 31 + round;
  NOTE_FIELD(config, checksum, old_checksum);
}

WRITER void set_window(struct config* config, const struct window* window) {
  uint8_t old[sizeof *window];
  snapshot(old, (const volatile uint8_t*)&config->window, sizeof old);
  config->window = *window;  // one 16-byte store (movups) at -O2
  NOTE_FIELD(config, window, old);
}

WRITER void set_weight(struct config* config, unsigned index, uint32_t weight) {
  const uint32_t old = config->weights[index];
  config->weights[index] = weight;
  NOTE_FIELD(config, weights[index], old);
}

WRITER void push_history(struct config* config, uint64_t value) {
  const unsigned slot = config->history_count % 4;
  const uint64_t old_value = config->history[slot];
  config->history[slot] = value;
  NOTE_FIELD(config, history[slot], old_value);
  uint16_t old_count;
  snapshot((uint8_t*)&old_count, (const volatile uint8_t*)&config->history_count, sizeof old_count);
  config->history_count++;
  NOTE_FIELD(config, history_count, old_count);
}

WRITER void rename_config(struct config* config, const char* name, size_t length) {
  uint8_t old[sizeof config->name];
  snapshot(old, (const volatile uint8_t*)config->name, length);
  memcpy(config->name, name, length);  // a call: the length is known at run time only
  note_write("g_config", offset_in(&g_config, config->name), length, old, config->name, __func__, "via memcpy");
}

// --- writers: buf -------------------------------------------------------------------

WRITER void fill_bytes(uint8_t* to, size_t length, uint8_t seed) {
  for (size_t i = 0; i < length; ++i) {
    const uint8_t old = to[i];
    to[i] = (uint8_t)(seed + i * 3);
    note_write("buf", offset_in(buf, &to[i]), 1, &old, &to[i], __func__, NULL);
  }
}

WRITER void copy_in(uint8_t* to, const uint8_t* from, size_t length) {
  uint8_t old[kBufSize];
  snapshot(old, to, length);
  memcpy(to, from, length);
  note_write("buf", offset_in(buf, to), length, old, to, __func__, "via memcpy");
}

WRITER void clear_range(uint8_t* to, int value, size_t length) {
  uint8_t old[kBufSize];
  snapshot(old, to, length);
  memset(to, value, length);
  note_write("buf", offset_in(buf, to), length, old, to, __func__, "via memset");
}

// The thread fills the pipe itself, then the kernel copies it into `to`.
WRITER void fill_from_pipe(uint8_t* to, size_t length, uint8_t seed) {
  uint8_t data[kBufSize];
  for (size_t i = 0; i < length; ++i) data[i] = (uint8_t)(seed ^ (i * 13));
  if (write(pipe_fds[1], data, length) != (ssize_t)length) abort();
  uint8_t old[kBufSize];
  snapshot(old, to, length);
  ssize_t got;
  do {
    got = read(pipe_fds[0], to, length);
  } while (got < 0 && errno == EINTR);
  if (got != (ssize_t)length) abort();  // one write of <= PIPE_BUF bytes is read whole
  note_write("buf", offset_in(buf, to), length, old, to, __func__, "kernel read");
}

// --- writers: moving ----------------------------------------------------------------

static void pause_us(uint64_t us) {
  struct timespec delay = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&delay, &delay) != 0 && errno == EINTR && !stop_requested) {
  }
}

WRITER void move_buffer(size_t capacity) {
  const uint64_t old_address = (uint64_t)(uintptr_t)moving_slot;
  struct moving* const block = realloc(moving_slot, capacity);
  if (block == NULL) abort();
  // Something right after the new block, so the next realloc cannot grow in
  // place: larger than every freed block, it comes from the top of the heap,
  // as the new block did (one arena, see main). The first 1024 moves really
  // move; after that the block may grow in place.
  if (blocker_count < sizeof blockers / sizeof blockers[0]) blockers[blocker_count++] = malloc(capacity + 64);
  moving_slot = block;
  note_value("moving_slot", 0, 8, old_address, (uint64_t)(uintptr_t)block, __func__);
  if (options.follow_delay_us > 0) pause_us(options.follow_delay_us);
  const uint64_t old_length = block->length;
  block->length = capacity;
  note_write("moving", offsetof(struct moving, length), 8, &old_length, &block->length, __func__, NULL);
}

WRITER void stamp_moving(struct moving* block, unsigned round) {
  uint64_t old_writes;
  snapshot((uint8_t*)&old_writes, (const volatile uint8_t*)&block->writes, sizeof old_writes);
  block->writes++;
  note_write("moving", offsetof(struct moving, writes), 8, &old_writes, &block->writes, __func__, NULL);
  const size_t index = round % (block->length - offsetof(struct moving, data));
  const uint8_t old = block->data[index];
  block->data[index] = (uint8_t)(round + 0x40);
  note_write("moving", offsetof(struct moving, data) + index, 1, &old, &block->data[index], __func__, NULL);
}

// --- one round ----------------------------------------------------------------------

static const struct window kWindows[2] = {{0x1000, 0x2000}, {0xabcdef0123456789, 0x1122334455667788}};
static const char kNames[] = "watch_target_config_name_abcdef_0123456789";
static uint8_t source_bytes[kBufSize];

static void run_round(unsigned index, unsigned round) {
  const unsigned slot = index % kSlots;
  const uint64_t k = 1 + (round + index) % 7;
  pthread_mutex_lock(&g_lock);
  // g_total first: its growing value orders the lock sections.
  total_fetch_add(k);
  total_add(k + 1);
  total_exchange(g_total + 3);
  const uint64_t seen = g_total;
  total_cas(seen, seen + 5);
  if (options.cas_miss) total_cas(seen, seen + 9);  // fails: g_total is seen + 5 now
  total_store(g_total + 11);

  set_flag((uint8_t)(round * 3 + index));
  flag_exchange((uint8_t)(0x80 | round));
  if (options.lock_bits) flag_bits((uint8_t)(1u << (round % 7)), (uint8_t)(round % 2 ? 0x80 : 0x03));

  configure(&g_config, round);
  set_window(&g_config, &kWindows[round % 2]);
  set_weight(&g_config, (round + index) % 8, round * 100 + index);
  push_history(&g_config, ((uint64_t)index << 32) | round);
  rename_config(&g_config, kNames + round % 8, 1 + (round * 5 + index) % 31);

  fill_bytes(buf + (round * 11) % 200, 3 + round % 6, (uint8_t)(index * 50 + round));
  copy_in(buf + (round * 17 + index) % 128, source_bytes + round % 64, 8 + (round * 7) % 56);
  clear_range(buf + (round * 29) % 192, (int)(round & 0xff), 4 + (round * 3) % 60);
  if (options.read_fd) fill_from_pipe(buf + (round * 13 + 5) % 200, 5 + round % 40, (uint8_t)(round ^ index));

  if (options.realloc_every > 0 && round % options.realloc_every == options.realloc_every - 1) {
    move_buffer(moving_slot->length + kMovingStep);
  }
  stamp_moving(moving_slot, round);
  if (counts_locked) {
    count_slot(slot);
    count_add(&g_counts[slot], (int32_t)k);
  }
  pthread_mutex_unlock(&g_lock);

  if (!counts_locked) {
    count_slot(slot);
    count_add(&g_counts[slot], (int32_t)k);
  }
}

// --- threads ------------------------------------------------------------------------

struct writer {
  pthread_t thread;
  unsigned index;
  pid_t tid;  // __atomic: set once the thread runs
};

static struct writer writers[kMaxThreads + 1];

static void* writer_main(void* argument) {
  struct writer* self = argument;
  rec.tid = gettid();
  rec.capacity = 1 << 20;
  rec.text = malloc(rec.capacity);  // mmap-sized: never next to buf or moving
  if (rec.text == NULL) abort();
  __atomic_store_n(&self->tid, rec.tid, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&go_flag, __ATOMIC_ACQUIRE)) {
    if (stop_requested) return NULL;
    pause_us(1000);
  }
  for (uint64_t round = 0; !stop_requested && (options.rounds == 0 || round < options.rounds); ++round) {
    run_round(self->index, (unsigned)round);
    flush_record();
    __atomic_fetch_add(&rounds_finished, 1, __ATOMIC_RELEASE);
    if (options.interval_us > 0 && !stop_requested) pause_us(options.interval_us);
  }
  // No writer exits while another may still move `moving`: an exiting
  // thread's malloc cache goes back to the heap, where realloc could reuse
  // it instead of moving to the top.
  __atomic_fetch_add(&writers_done, 1, __ATOMIC_ACQ_REL);
  while (!__atomic_load_n(&writers_release, __ATOMIC_ACQUIRE)) pause_us(1000);
  free(rec.text);
  return NULL;
}

static void start_writer(unsigned index) {
  writers[index].index = index;
  if (pthread_create(&writers[index].thread, NULL, writer_main, &writers[index]) != 0) abort();
}

static pid_t tid_of(unsigned index) {
  pid_t tid;
  while ((tid = __atomic_load_n(&writers[index].tid, __ATOMIC_ACQUIRE)) == 0) pause_us(100);
  return tid;
}

// --- main ---------------------------------------------------------------------------

static void on_signal(int signal_number) {
  (void)signal_number;
  stop_requested = 1;
}

static void usage(const char* problem) {
  fprintf(stderr,
          "watch_target: %s\nusage: watch_target [--threads N] [--rounds N] [--interval-us N] [--go FILE] "
          "[--record FILE] [--late-thread] [--realloc] [--realloc-every K] [--read-fd] [--cas-miss] "
          "[--follow-delay-us N] [--exec-at-end FILE] [--lock-bits]\n",
          problem);
  exit(2);
}

static uint64_t parse_number(const char* option, const char* text, uint64_t low, uint64_t high) {
  if (text == NULL) usage("missing value");
  char* end = NULL;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || value < low || value > high) {
    fprintf(stderr, "watch_target: %s %s: expected a number from %" PRIu64 " to %" PRIu64 "\n", option, text, low,
            high);
    usage("bad value");
  }
  return value;
}

static void parse_options(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* option = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(option, "--threads") == 0) {
      options.threads = (unsigned)parse_number(option, value, 1, kMaxThreads), ++i;
    } else if (strcmp(option, "--rounds") == 0) {
      options.rounds = parse_number(option, value, 0, 1000000), ++i;
    } else if (strcmp(option, "--interval-us") == 0) {
      options.interval_us = parse_number(option, value, 0, 10000000), ++i;
    } else if (strcmp(option, "--follow-delay-us") == 0) {
      options.follow_delay_us = parse_number(option, value, 0, 10000000), ++i;
    } else if (strcmp(option, "--realloc-every") == 0) {
      options.realloc_every = parse_number(option, value, 1, 1000000), ++i;
    } else if (strcmp(option, "--go") == 0 || strcmp(option, "--record") == 0) {
      if (value == NULL || value[0] == '\0') usage("missing file name");
      *(option[2] == 'g' ? &options.go_file : &options.record_path) = value, ++i;
    } else if (strcmp(option, "--exec-at-end") == 0) {
      if (value == NULL || value[0] == '\0') usage("missing file name");
      options.exec_end_file = value, ++i;
    } else if (strcmp(option, "--lock-bits") == 0) {
      options.lock_bits = true;
    } else if (strcmp(option, "--late-thread") == 0) {
      options.late_thread = true;
    } else if (strcmp(option, "--realloc") == 0) {
      if (options.realloc_every == 0) options.realloc_every = 4;
    } else if (strcmp(option, "--read-fd") == 0) {
      options.read_fd = true;
    } else if (strcmp(option, "--cas-miss") == 0) {
      options.cas_miss = true;
    } else {
      fprintf(stderr, "watch_target: unknown option %s\n", option);
      usage("bad option");
    }
  }
}

static void print_hex_line(const char* name, const void* bytes, size_t length) {
  printf("final %s ", name);
  for (size_t i = 0; i < length; ++i) printf("%02x", ((const uint8_t*)bytes)[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  parse_options(argc, argv);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;  // no SA_RESTART: a signal ends the waits at once
  sigaction(SIGTERM, &action, NULL);
  sigaction(SIGINT, &action, NULL);
  signal(SIGPIPE, SIG_IGN);  // a reader that closed stdout after ready must not kill the exit lines' writer

  if (options.record_path != NULL) {
    record_fd = open(options.record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (record_fd < 0) {
      fprintf(stderr, "watch_target: cannot open %s: %s\n", options.record_path, strerror(errno));
      return 1;
    }
  }
  // One heap for every thread: a writer's blocker then lands right after the
  // block it just realloc'd, not in the thread's own arena.
  mallopt(M_ARENA_MAX, 1);
  if (options.read_fd && pipe2(pipe_fds, O_CLOEXEC) != 0) abort();
  for (size_t i = 0; i < sizeof source_bytes; ++i) source_bytes[i] = (uint8_t)(i * 7 + 1);
  buf = calloc(1, kBufSize);
  moving_slot = calloc(1, kMovingStart);
  if (buf == NULL || moving_slot == NULL) abort();
  memcpy(moving_slot->tag, "moving-block", 12);
  moving_slot->length = kMovingStart;
  blockers[blocker_count++] = malloc(kMovingStart + 64);
  const unsigned writer_count = options.threads + (options.late_thread ? 1 : 0);
  counts_locked = writer_count > kSlots;

  for (unsigned w = 0; w < options.threads; ++w) start_writer(w);
  printf("obj g_total %p %zu\n", (void*)&g_total, sizeof g_total);
  printf("obj g_counts %p %zu\n", (void*)g_counts, sizeof g_counts);
  printf("obj g_flag %p %zu\n", (void*)&g_flag, sizeof g_flag);
  printf("obj g_config %p %zu\n", (void*)&g_config, sizeof g_config);
  printf("obj buf %p %d\n", (void*)buf, kBufSize);
  printf("obj moving %p %" PRIu64 "\n", (void*)moving_slot, moving_slot->length);
  printf("obj moving_slot %p %zu\n", (void*)&moving_slot, sizeof moving_slot);
  for (unsigned w = 0; w < options.threads; ++w) printf("thread worker%u %d\n", w, (int)tid_of(w));
  printf("pid %d\n", (int)getpid());
  printf("ready\n");
  fflush(stdout);

  if (options.go_file != NULL) {
    struct stat info;
    while (!stop_requested && stat(options.go_file, &info) != 0) pause_us(1000);
  }
  __atomic_store_n(&go_flag, 1, __ATOMIC_RELEASE);

  bool late_started = false;
  if (options.late_thread) {
    // After go and after some writer finished a round: a thread no watch armed at attach.
    while (!stop_requested && __atomic_load_n(&rounds_finished, __ATOMIC_ACQUIRE) == 0) pause_us(200);
    if (!stop_requested) {
      start_writer(options.threads);
      late_started = true;
    }
  }
  const unsigned started = options.threads + (late_started ? 1 : 0);
  while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < (int)started) pause_us(1000);
  __atomic_store_n(&writers_release, 1, __ATOMIC_RELEASE);
  for (unsigned w = 0; w < started; ++w) pthread_join(writers[w].thread, NULL);

  if (late_started) printf("thread late %d\n", (int)writers[options.threads].tid);
  print_hex_line("g_total", &g_total, sizeof g_total);
  print_hex_line("g_counts", g_counts, sizeof g_counts);
  print_hex_line("g_flag", &g_flag, sizeof g_flag);
  print_hex_line("g_config", &g_config, sizeof g_config);
  print_hex_line("buf", buf, kBufSize);
  print_hex_line("moving", moving_slot, moving_slot->length);
  print_hex_line("moving_slot", &moving_slot, sizeof moving_slot);
  fflush(stdout);
  for (size_t i = 0; i < blocker_count; ++i) free(blockers[i]);  // read: the compiler must keep the mallocs
  if (options.exec_end_file != NULL) {
    execl("/bin/sh", "sh", "-c", "while [ ! -e \"$0\" ]; do sleep 0.01; done", options.exec_end_file, (char*)NULL);
    return 1;
  }
  return 0;
}
