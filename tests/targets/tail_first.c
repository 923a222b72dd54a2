/* A request handler whose first instruction is a tail jump, as
 * redis-server's getCommand is `jmp getGenericCommand`: under gcc and clang
 * -O2 with their default flags, get_command is `jmp generic_lookup`.
 *
 *   tail_first RECORD [REQUESTS]
 *
 * Runs REQUESTS requests (default 4) one after another on the main thread,
 * then calls all_done(), then writes RECORD: per request, in call order, one
 * line "N FUNCTION" per call of get_command, generic_lookup, hash_key and
 * store_value. Recording calls nothing (the lines are kept in memory until
 * the end), so a trace of these functions sees only them. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static char record[1 << 16];
static size_t record_length;
static long table[1024];
static volatile long sink;

__attribute__((always_inline)) static inline void note(long request, const char* function) {
  char digits[24];
  int count = 0;
  do {
    digits[count++] = (char)('0' + request % 10);
    request /= 10;
  } while (request > 0 && count < 20);
  while (count > 0 && record_length < sizeof record - 64) record[record_length++] = digits[--count];
  record[record_length++] = ' ';
  for (const char* c = function; *c && record_length < sizeof record - 2; ++c) record[record_length++] = *c;
  record[record_length++] = '\n';
}

__attribute__((noinline)) long hash_key(long request, long key) {
  note(request, "hash_key");
  return (key * 2654435761L) & 1023;
}

__attribute__((noinline)) long store_value(long request, long slot, long value) {
  note(request, "store_value");
  table[slot] += value;
  return table[slot];
}

__attribute__((noinline)) long generic_lookup(long request, long key) {
  note(request, "generic_lookup");
  const long slot = hash_key(request, key);
  return store_value(request, slot, key) + slot;
}

/* Its first instruction is the tail jump. */
__attribute__((noinline)) long get_command(long request, long key) { return generic_lookup(request, key); }

__attribute__((noinline)) void all_done(void) { __asm__ volatile(""); }

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long requests = argc > 2 ? atol(argv[2]) : 4;
  for (long request = 0; request < requests; ++request) {
    note(request, "get_command");
    sink += get_command(request, request * 7 + 1);
  }
  all_done();
  const int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 3;
  const ssize_t written = write(fd, record, record_length);
  close(fd);
  return written == (ssize_t)record_length ? 0 : 4;
}
