/* What every uprobe program of xref does with a hit's values: run the
 * compiled fetches (shared/bpf_abi.h, struct xref_fetch) and evaluate a
 * lowered filter over them (struct xref_filter_program). Included by
 * trace.bpf.c, probe.bpf.c and the watch programs (watch_detail.bpf.h);
 * each passes its own scratch maps in. */
#ifndef XREF_FETCH_FILTER_BPF_H
#define XREF_FETCH_FILTER_BPF_H

#include "bpf_abi.h"

/* Fetched values of the current hit; :string fetches' bytes in their
 * string slots, zero after the string (so a slot is a map key as it is). */
struct fetched {
  __u64 values[XREF_FETCH_MAX_ITEMS];
  __s16 errors[XREF_FETCH_MAX_ITEMS];
  __u16 failed;
  __u8 count;
  __u8 string_count; /* string fetches read into slots (read or failed) */
  __u32 reserved;
  __u8 strings[XREF_FETCH_MAX_STRINGS][XREF_STRING_BUFFER_BYTES];
};

/* The registers of the current hit, copied once: reading pt_regs fields
 * at a variable offset straight from ctx is not allowed. */
#define PT_REGS_WORDS (sizeof(struct pt_regs) / 8)
struct saved_regs {
  __u64 words[32];
};

/* Per-CPU scratch for the current hit: a program including this header
 * gets its own copy of both maps. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fetched);
} scratch_fetched SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct saved_regs);
} scratch_regs SEC(".maps");

static __always_inline __u64 extend(__u64 raw, __u8 width, __u8 is_signed) {
  if (width >= 8) return raw;
  __u32 bits = (__u32)width * 8;
  __u64 mask = (1ull << bits) - 1;
  raw &= mask;
  if (is_signed && (raw >> (bits - 1)) & 1) raw |= ~mask;
  return raw;
}

/* Runs `count` fetches into `out`, the registers copied into `regs`
 * first; a failed read keeps its -errno and is flagged, never reported as
 * a value. */
/* bpf_loop's context for reading the fetches of one hit. */
struct fetch_walk {
  const struct xref_fetch *fetches;
  const struct saved_regs *regs;
  struct fetched *out;
};

/* A :string fetch: the string at `address`, at most `bound` bytes, into
 * string slot `slot`. Read with room for one byte more than the bound: a
 * string of exactly `bound` bytes ends there, a longer one does not. The
 * value is the length kept, plus XREF_STRING_CUT when cut. */
static __always_inline __s16 read_string(struct fetched *out, __u8 slot, __u16 bound, __u64 address, __u64 *value) {
  __u8 *buffer = out->strings[slot & (XREF_FETCH_MAX_STRINGS - 1)];
  __builtin_memset(buffer, 0, XREF_STRING_BUFFER_BYTES);
  if (bound == 0 || bound > XREF_STRING_MAX_BYTES) bound = XREF_STRING_DEFAULT_BYTES;
  __u32 size = (__u32)bound + 2;
  if (size > XREF_STRING_BUFFER_BYTES) size = XREF_STRING_BUFFER_BYTES;
  long read = bpf_probe_read_user_str(buffer, size, (const void *)address);
  if (read < 0) {
    __builtin_memset(buffer, 0, XREF_STRING_BUFFER_BYTES);
    return (__s16)read;
  }
  __u64 length = read > 0 ? (__u64)read - 1 : 0; /* without the NUL */
  if (length > bound) {
    /* Cut: keep `bound` bytes, zero the one past them (and its NUL). */
    __u32 at = bound;
    asm volatile("" : "+r"(at));
    if (at < XREF_STRING_BUFFER_BYTES - 1) {
      buffer[at] = 0;
      buffer[at + 1] = 0;
    }
    *value = (__u64)bound | XREF_STRING_CUT;
  } else {
    *value = length;
  }
  return 0;
}

/* Reads fetch `i` into walk->out; 1 ends the walk. */
static long fetch_step(__u32 i, void *data) {
  struct fetch_walk *walk = data;
  const struct saved_regs *regs = walk->regs;
  struct fetched *out = walk->out;
  if (!walk->fetches || !regs || !out || i >= XREF_FETCH_MAX_ITEMS || i >= out->count) return 1;
  /* The mask keeps the verifier sure of the bound; the empty asm stops
   * clang from dropping it as redundant after the check above. */
  asm volatile("" : "+r"(i));
  i &= XREF_FETCH_MAX_ITEMS - 1;
  const struct xref_fetch *fetch = &walk->fetches[i];
  __u32 word = fetch->regs_offset / 8;
  __u64 value = word < PT_REGS_WORDS ? regs->words[word & 31] : 0;
  if (fetch->index_word_plus_one) {
    __u32 index_word = fetch->index_word_plus_one - 1;
    value += (index_word < PT_REGS_WORDS ? regs->words[index_word & 31] : 0) * fetch->index_scale;
  }
  __s16 error = 0;
  /* A string's last dereference gives its address: no load there. */
  const __u8 string_slot = fetch->string_slot;
  const __u8 loads = string_slot && fetch->deref_count ? fetch->deref_count - 1 : fetch->deref_count;
  for (int d = 0; d < XREF_FETCH_MAX_DEREFS; d++) {
    if (d >= loads) break;
    __u64 address = value + (__s64)fetch->deref_offsets[d];
    __u32 size = !string_slot && d + 1 == loads ? fetch->width : 8;
    if (size > 8) size = 8;
    if (size == 0) size = 1;
    value = 0;
    long read = bpf_probe_read_user(&value, size, (const void *)address);
    if (read < 0) {
      error = (__s16)read;
      value = 0;
      break;
    }
  }
  if (string_slot) {
    if (!error && fetch->deref_count) {
      const __u64 address = value + (__s64)fetch->deref_offsets[(fetch->deref_count - 1) & (XREF_FETCH_MAX_DEREFS - 1)];
      error = read_string(out, string_slot - 1, fetch->string_bound, address, &value);
    }
    out->string_count++;
    out->values[i] = error ? 0 : value;
  } else {
    out->values[i] = error ? 0 : extend(value, fetch->width, fetch->is_signed);
  }
  out->errors[i] = error;
  if (error) out->failed |= (__u16)(1u << i);
  return 0;
}

/* The same over registers a program already copied (a perf event's, whose
 * ctx is not a struct pt_regs; a store probe's, copied once per hit). */
static __always_inline void read_fetches_from(const struct saved_regs *regs, const struct xref_fetch *fetches,
                                              __u8 count, struct fetched *out) {
  out->count = count;
  out->failed = 0;
  out->string_count = 0;
  if (count == 0) return;
  struct fetch_walk walk = {.fetches = fetches, .regs = regs, .out = out};
  bpf_loop(count, fetch_step, &walk, 0);
}

/* The fetches of one hit, under bpf_loop: the verifier checks one fetch,
 * not every path through all of them. */
static __always_inline void read_fetches(struct pt_regs *ctx, const struct xref_fetch *fetches, __u8 count,
                                         struct saved_regs *regs, struct fetched *out) {
  out->count = count;
  out->failed = 0;
  out->string_count = 0;
  if (count == 0) return;
  if (bpf_probe_read_kernel(regs->words, sizeof(struct pt_regs), ctx) != 0) {
    out->count = 0;
    return;
  }
  read_fetches_from(regs, fetches, count, out);
}

/* A map holding one lowered filter (user space writes it; zero-filled:
 * no filter). */
#define FILTER_PROGRAM_MAP(name)                    \
  struct {                                          \
    __uint(type, BPF_MAP_TYPE_ARRAY);               \
    __uint(max_entries, 1);                         \
    __type(key, __u32);                             \
    __type(value, struct xref_filter_program);      \
  } name SEC(".maps")

/* Filter results. */
#define XREF_FILTER_REJECTS 0
#define XREF_FILTER_ACCEPTS 1
/* A value the filter needs was not read: neither accepted nor rejected. */
#define XREF_FILTER_UNREADABLE 2

/* One filter walk: bpf_loop's context. */
struct filter_walk {
  const struct xref_filter_program *program;
  const struct fetched *values;
  __u32 pc;
  int result;
};

/* STR_EQ / STR_PREFIX: the string in slot insn->string_slot (its value
 * `value`: length | XREF_STRING_CUT) against the program's string number
 * insn->constant, 8 bytes at a time; both are zero past their length. */
static __always_inline int string_compare(const struct xref_filter_program *program,
                                          const struct xref_filter_insn *insn, const struct fetched *values,
                                          __u64 value) {
  const __u32 index = (__u32)insn->constant & (XREF_FILTER_MAX_STRINGS - 1);
  const __u32 constant_length = program->string_lengths[index];
  const __u64 length = value & XREF_STRING_LENGTH_MASK;
  if (constant_length > XREF_STRING_MAX_BYTES) return 0;
  if (insn->op == XREF_FILTER_OP_STR_EQ) {
    if ((value & XREF_STRING_CUT) || length != constant_length) return 0;
  } else if (length < constant_length) {
    return 0;
  }
  const __u64 *fetched = (const __u64 *)values->strings[insn->string_slot & (XREF_FETCH_MAX_STRINGS - 1)];
  const __u64 *wanted = (const __u64 *)program->strings[index];
  for (__u32 word = 0; word < XREF_STRING_MAX_BYTES / 8; word++) {
    const __u32 done = word * 8;
    if (done >= constant_length) break;
    const __u32 left = constant_length - done;
    const __u64 mask = left >= 8 ? ~0ull : (1ull << (left * 8)) - 1;
    if ((fetched[word] ^ wanted[word]) & mask) return 0;
  }
  return 1;
}

/* One step of a lowered filter; 1 ends the walk with walk->result. */
static long filter_step(__u32 step, void *data) {
  struct filter_walk *walk = data;
  const struct xref_filter_program *program = walk->program;
  const struct fetched *values = walk->values;
  const __u32 pc = walk->pc;
  walk->result = XREF_FILTER_REJECTS;
  if (!program || !values || pc >= program->insn_count || pc >= XREF_FILTER_MAX_INSNS) return 1;
  __u32 slot = pc;
  asm volatile("" : "+r"(slot));
  const struct xref_filter_insn *insn = &program->insns[slot & (XREF_FILTER_MAX_INSNS - 1)];
  __u8 lhs_slot = insn->lhs_slot;
  if (lhs_slot >= XREF_FETCH_MAX_ITEMS) return 1;
  if ((values->failed >> lhs_slot) & 1) {
    walk->result = XREF_FILTER_UNREADABLE;
    return 1;
  }
  __u64 lhs = values->values[lhs_slot];
  __u64 rhs = insn->constant;
  if (insn->rhs_slot != XREF_FILTER_CONSTANT_SLOT) {
    __u8 rhs_slot = insn->rhs_slot;
    if (rhs_slot >= XREF_FETCH_MAX_ITEMS) return 1;
    if ((values->failed >> rhs_slot) & 1) {
      walk->result = XREF_FILTER_UNREADABLE;
      return 1;
    }
    rhs = values->values[rhs_slot];
  }
  int result;
  if (insn->op == XREF_FILTER_OP_STR_EQ || insn->op == XREF_FILTER_OP_STR_PREFIX) {
    result = string_compare(program, insn, values, lhs);
  } else if (insn->is_signed) {
    __s64 a = (__s64)lhs, b = (__s64)rhs;
    switch (insn->op) {
      case XREF_FILTER_OP_EQ: result = a == b; break;
      case XREF_FILTER_OP_NE: result = a != b; break;
      case XREF_FILTER_OP_LT: result = a < b; break;
      case XREF_FILTER_OP_LE: result = a <= b; break;
      case XREF_FILTER_OP_GT: result = a > b; break;
      case XREF_FILTER_OP_GE: result = a >= b; break;
      default: return 1;
    }
  } else {
    switch (insn->op) {
      case XREF_FILTER_OP_EQ: result = lhs == rhs; break;
      case XREF_FILTER_OP_NE: result = lhs != rhs; break;
      case XREF_FILTER_OP_LT: result = lhs < rhs; break;
      case XREF_FILTER_OP_LE: result = lhs <= rhs; break;
      case XREF_FILTER_OP_GT: result = lhs > rhs; break;
      case XREF_FILTER_OP_GE: result = lhs >= rhs; break;
      default: return 1;
    }
  }
  __u8 next = result ? insn->on_true : insn->on_false;
  if (next == XREF_FILTER_ACCEPT) {
    walk->result = XREF_FILTER_ACCEPTS;
    return 1;
  }
  if (next == XREF_FILTER_REJECT || next <= pc) return 1; /* only forward */
  walk->pc = next;
  return 0;
}

/* A lowered filter (forward jumps only, so at most XREF_FILTER_MAX_INSNS
 * steps) over `values`. A null or empty program accepts every hit. The
 * steps run under bpf_loop: the verifier checks one step, not every path
 * through all of them. */
static __always_inline int filter_result(const struct xref_filter_program *program, const struct fetched *values) {
  if (!program || program->insn_count == 0) return XREF_FILTER_ACCEPTS;
  struct filter_walk walk = {.program = program, .values = values, .pc = 0, .result = XREF_FILTER_REJECTS};
  if (bpf_loop(XREF_FILTER_MAX_INSNS, filter_step, &walk, 0) < 0) return XREF_FILTER_REJECTS;
  return walk.result;
}

#endif
