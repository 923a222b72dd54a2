// string_target: the ground truth for :string fetches. After its go file
// appears it passes a fixed list of keys, `--rounds` times, to
// lookup_key(const char *key) and to handle_command(const struct command *),
// whose name is an array 8 bytes into the struct, both called by
// handle_key(key, command); then it writes every
// distinct key (hex, so any byte survives) with how often it was passed,
// and exits. Built by gcc and clang -O2 as users build.
// `--keys a,b,c` passes those keys instead of the fixed list (each once a
// round), and `--log FILE` writes each key (hex, "-" when empty) on a line
// of its own just before lookup_key gets it, unbuffered: a debugger stopped
// in lookup_key finds there every key passed so far (tests/gdb, tests/lldb).
//   string_target --record FILE --go-file FILE [--rounds N] [--keys LIST] [--log FILE]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct command {
  int id;
  int flags;
  char name[72];
};

static const char *const fixed_keys[] = {
    "set", "setex", "set", "get", "getdel", "del", "set", "setex", "",
    // 100 bytes: longer than the default bound of 64, cut there
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    // exactly 64 bytes: not cut
    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
    "caf\xff", "say \"hi\"",
};
#define FIXED_KEY_COUNT (sizeof fixed_keys / sizeof fixed_keys[0])
#define MAX_KEYS 64

static const char *keys[MAX_KEYS];
static size_t key_count;

volatile unsigned long sink;

__attribute__((noinline)) int lookup_key(const char *key) {
  sink += strlen(key);
  return (int)(sink & 1);
}

__attribute__((noinline)) int handle_command(const struct command *command) {
  sink += (unsigned long)command->id + strlen(command->name);
  return (int)(sink & 1);
}

// Both for one key: a window of `xref trace --start handle_key` holds one
// call of each (a sum, so neither is a tail call).
__attribute__((noinline)) int handle_key(const char *key, const struct command *command) {
  return lookup_key(key) + handle_command(command);
}

static void write_key(FILE *out, const char *key) {
  if (key[0] == 0) fputs("-", out);
  for (const char *c = key; *c; ++c) fprintf(out, "%02x", (unsigned char)*c);
}

int main(int argc, char **argv) {
  const char *record = NULL, *go_file = NULL, *log = NULL;
  char *list = NULL;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--record") == 0) record = argv[i + 1];
    else if (strcmp(argv[i], "--go-file") == 0) go_file = argv[i + 1];
    else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--keys") == 0) list = argv[i + 1];
    else if (strcmp(argv[i], "--log") == 0) log = argv[i + 1];
  }
  if (list) {
    for (char *key = strtok(list, ","); key && key_count < MAX_KEYS; key = strtok(NULL, ",")) keys[key_count++] = key;
  } else {
    for (size_t i = 0; i < FIXED_KEY_COUNT; ++i) keys[key_count++] = fixed_keys[i];
  }
  FILE *log_out = log ? fopen(log, "w") : NULL;
  if (!record || !go_file || rounds < 1 || key_count == 0 || (log && !log_out)) {
    fprintf(stderr, "usage: string_target --record FILE --go-file FILE [--rounds N] [--keys LIST] [--log FILE]\n");
    return 2;
  }
  if (log_out) setvbuf(log_out, NULL, _IONBF, 0);
  printf("ready\n");
  fflush(stdout);
  // A finite run even when no go file comes: a minute at most.
  for (int waited = 0; access(go_file, F_OK) != 0; ++waited) {
    if (waited == 60000) return 3;
    usleep(1000);
  }
  unsigned long passed[MAX_KEYS] = {0};
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < key_count; ++i) {
      struct command command = {(int)i, 0, {0}};
      strncpy(command.name, keys[i], sizeof command.name - 1);
      if (log_out) {
        write_key(log_out, keys[i]);
        fputs("\n", log_out);
      }
      sink += (unsigned long)handle_key(keys[i], &command);
      ++passed[i];
    }
  }
  FILE *out = fopen(record, "w");
  if (!out) return 4;
  // One line per distinct key: "HEX COUNT" ("-" for the empty key).
  for (size_t i = 0; i < key_count; ++i) {
    int first = 1;
    for (size_t j = 0; j < i; ++j) first &= strcmp(keys[i], keys[j]) != 0;
    if (!first) continue;
    unsigned long count = 0;
    for (size_t j = 0; j < key_count; ++j) count += strcmp(keys[i], keys[j]) == 0 ? passed[j] : 0;
    write_key(out, keys[i]);
    fprintf(out, " %lu\n", count);
  }
  fclose(out);
  return 0;
}
