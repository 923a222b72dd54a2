/* A target that calls libc's string functions (GNU IFUNCs: on a CPU with
 * AVX-512 glibc binds their *_evex implementations) and malloc/free, a
 * known number of times, for check_libc_probe.py.
 *
 * At start it calls each once (so every lazy binding is done), then writes
 * one line per function, "NAME 0xLIVE", the address its call reaches (an
 * IFUNC's address taken in the executable is the implementation bound),
 * and "ready". On stdin: "ping" calls getppid(2) (a peer's sign of life)
 * and answers "pong"; "go N"
 * calls each function N times between begin_round() and end_round() and
 * answers "did". EOF exits. Only read(2), write(2), getppid(2) and _exit(2) run
 * besides the counted calls, so nothing else in libc calls them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile size_t sink;
static char text[256];
static char other[256];
static char buffer[256];
/* Read anew at each call: the compiler cannot see which object the calls
 * write, so it cannot expand memset and memcpy inline for its size. */
static char* volatile destination = buffer;

__attribute__((noinline)) void begin_round(void) { __asm__ volatile(""); }
__attribute__((noinline)) void end_round(void) { __asm__ volatile(""); }

static void say(const char* line, size_t length) {
  while (length > 0) {
    const ssize_t written = write(1, line, length);
    if (written <= 0) _exit(3);
    line += written;
    length -= (size_t)written;
  }
}

static void say_address(const char* name, const void* address) {
  char line[64];
  size_t at = 0;
  for (const char* c = name; *c; ++c) line[at++] = *c;
  line[at++] = ' ';
  line[at++] = '0';
  line[at++] = 'x';
  const uintptr_t value = (uintptr_t)address;
  for (int shift = 60; shift >= 0; shift -= 4) line[at++] = "0123456789abcdef"[(value >> shift) & 0xf];
  line[at++] = '\n';
  say(line, at);
}

/* One call of each. The lengths vary at run time, and every result
 * reaches `sink`; callers keep `length` below 200. noipa: the length range
 * the callers pass would let gcc expand memset and memcpy inline. */
#ifdef __clang__
#define NOT_SPECIALIZED __attribute__((noinline))
#else
#define NOT_SPECIALIZED __attribute__((noipa))
#endif
NOT_SPECIALIZED static void call_each(size_t length) {
  sink += strlen(text + (length & 7));
  sink += (size_t)strcmp(text, other);
  memset(destination, (int)length, length);
  sink += (size_t)(uintptr_t)strchr(text, 'q');
  sink += (size_t)memcmp(text, other, length & 127);
  memcpy(destination, text, length);
  void* block = malloc(length + 16);
  sink += (size_t)(uintptr_t)block;
  free(block);
}

static size_t parse_count(const char* digits) {
  size_t count = 0;
  for (; *digits >= '0' && *digits <= '9'; ++digits) count = count * 10 + (size_t)(*digits - '0');
  return count;
}

int main(void) {
  for (int i = 0; i < 200; ++i) text[i] = other[i] = (char)('a' + i % 26);
  other[150] = 'Z';
  call_each(100);
  say_address("strlen", (const void*)strlen);
  say_address("strcmp", (const void*)strcmp);
  say_address("memset", (const void*)memset);
  say_address("strchr", (const void*)strchr);
  say_address("memcmp", (const void*)memcmp);
  say_address("memcpy", (const void*)memcpy);
  say_address("malloc", (const void*)malloc);
  say_address("free", (const void*)free);
  say("ready\n", 6);

  char line[64];
  size_t used = 0;
  for (;;) {
    const ssize_t got = read(0, line + used, 1);
    if (got <= 0) _exit(0);
    if (line[used] != '\n' && used + 1 < sizeof line) {
      ++used;
      continue;
    }
    line[used] = '\0';
    used = 0;
    if (line[0] == 'p') {
      (void)getppid();
      say("pong\n", 5);
    } else if (line[0] == 'g' && line[1] == 'o' && line[2] == ' ') {
      const size_t count = parse_count(line + 3);
      begin_round();
      for (size_t i = 0; i < count; ++i) call_each(100 + i % 50);
      end_round();
      say("did\n", 4);
    }
  }
}
