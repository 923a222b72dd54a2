// The stores the store-site finder (helper/sites/store_sites.h) must find,
// built by gcc and clang -O2 as users build (tests/unit/sites/
// store_sites_test.cpp reads the binaries with objdump and by hand):
// rip-relative globals of 1, 2, 4 and 8 bytes, struct fields through
// pointers, a byte loop, atomics (lock add, xchg, cmpxchg, xadd), a fixed-size
// memset large enough for rep stos, vector stores, setcc into memory, and a
// function that keeps a frame pointer. Each writer is noinline so that it
// stays a function of its own. Run, it writes once through each and prints
// the totals (so nothing is optimised away).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

uint64_t g_total;
uint32_t g_counts[4];
uint16_t g_short;
uint8_t g_flag;

struct config {
  uint8_t mode;
  uint16_t port;
  uint32_t limit;
  uint64_t serial;
  char name[32];
  uint64_t slots[12];
};

struct config g_config;

NOINLINE void set_total(uint64_t value) { g_total = value; }

NOINLINE void set_globals(uint8_t flag, uint16_t s, uint32_t count) {
  g_flag = flag;
  g_short = s;
  g_counts[2] = count;
}

NOINLINE void set_constants(void) {
  g_total = 0xffffffffffffffffull;  // an 8-byte store of a sign-extended imm32
  g_counts[1] = 0x12345678;
  g_flag = 0xab;
}

NOINLINE void fill_config(struct config* c, uint64_t serial, uint32_t limit, uint16_t port) {
  c->serial = serial;
  c->limit = limit;
  c->port = port;
  c->mode = 3;
}

NOINLINE void set_slot(struct config* c, long i, uint64_t value) { c->slots[i] = value; }

NOINLINE void byte_loop(uint8_t* out, const uint8_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = (uint8_t)(in[i] ^ 0x5a);
}

NOINLINE uint64_t atomics(uint64_t* p, uint32_t* q) {
  __atomic_fetch_add(p, 5, __ATOMIC_SEQ_CST);   // lock add (result unused) or lock xadd
  uint64_t old = __atomic_exchange_n(p, 7, __ATOMIC_SEQ_CST);  // xchg
  uint32_t expected = 1;
  __atomic_compare_exchange_n(q, &expected, 2, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);  // lock cmpxchg
  return old + __atomic_fetch_add(q, 3, __ATOMIC_SEQ_CST);  // lock xadd
}

NOINLINE void read_modify_write(uint32_t* p, uint8_t* b) {
  p[0] += 9;
  p[1] |= 0x10;
  p[2] ^= 0xff;
  ++b[0];
}

NOINLINE void clear_config(void) { memset(&g_config, 0, sizeof g_config); }

NOINLINE void clear_big(uint64_t* p) { memset(p, 0, 4096); }

NOINLINE void vector_copy(struct config* dst, const struct config* src) {
  __builtin_memcpy(dst->name, src->name, sizeof dst->name);
}

NOINLINE void flag_less(uint8_t* out, long a, long b) { *out = a < b; }

// __builtin_frame_address makes gcc and clang keep rbp as the frame pointer
// here (push rbp; ... mov rbp, rsp): its locals are rbp-based stack stores.
NOINLINE uint64_t framed(uint64_t seed) {
  volatile uint64_t local[4];
  for (int i = 0; i < 4; ++i) local[i] = seed + (uint64_t)i;
  return local[0] + local[3] + (uint64_t)(uintptr_t)__builtin_frame_address(0);
}

// Data inside a function, as OpenSSL's assembly keeps strings in its
// functions: 0x06 decodes as nothing in 64-bit mode, and the 88 01 after it
// reads as `mov [rcx], al`, a store that is really data. Never called.
__asm__(".text\n"
        ".globl asm_with_data\n"
        ".type asm_with_data, @function\n"
        "asm_with_data:\n"
        "  movq %rdi, (%rsi)\n"
        "  ret\n"
        "  .byte 0x06, 0x88, 0x01\n"
        ".size asm_with_data, .-asm_with_data\n");

// Data that decodes cleanly, jumped over and after the ret, as OpenSSL's
// RC4_options keeps its name string: 88 02 and 88 01 read as `mov [rdx],
// al` and `mov [rcx], al`, stores no path reaches. Never called.
__asm__(".text\n"
        ".globl asm_data_after_ret\n"
        ".type asm_data_after_ret, @function\n"
        "asm_data_after_ret:\n"
        "  jmp 1f\n"
        "  .byte 0x88, 0x02\n"
        "1:\n"
        "  movq %rdi, (%rsi)\n"
        "  ret\n"
        "  .byte 0x88, 0x01\n"
        ".size asm_data_after_ret, .-asm_data_after_ret\n");

int main(int argc, char** argv) {
  (void)argv;
  uint8_t in[64], out[64];
  memset(in, argc, sizeof in);
  uint64_t* big = calloc(512, sizeof *big);
  uint32_t words[4] = {1, 2, 3, 4};
  uint8_t byte = 0;
  struct config copy;
  memset(&copy, argc, sizeof copy);
  set_total((uint64_t)argc);
  set_globals(1, 2, 3);
  set_constants();
  fill_config(&g_config, 1, 2, 3);
  set_slot(&g_config, argc, 9);
  byte_loop(out, in, sizeof in);
  uint64_t r = atomics(&g_total, &words[0]);
  read_modify_write(words, &byte);
  vector_copy(&g_config, &copy);
  flag_less(&g_flag, argc, 2);
  r += framed((uint64_t)argc);
  clear_big(big);
  clear_config();
  printf("%llu %u %u %u %u %u\n", (unsigned long long)(g_total + r), g_counts[1], g_short, g_flag, out[3],
         words[0] + byte);
  free(big);
  return 0;
}
