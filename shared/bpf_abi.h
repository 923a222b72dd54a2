/* The data the helper hands to the BPF uprobe program: compiled fetches and
 * the compiled filter. Plain C, because bpf/NAME.bpf.c includes this same
 * header; the C++ side (fetch_spec.h, filter_program.h) fills these structs.
 *
 * Layouts are fixed-size with explicit padding so the host compiler and
 * clang -target bpf agree byte for byte; the asserts at the end pin them. */
#ifndef XREF_BPF_ABI_H
#define XREF_BPF_ABI_H

/* A BPF program built on vmlinux.h already has the __u8.. typedefs, and
 * linux/types.h would then redefine kernel types next to it. */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Bounds that keep every BPF loop over these arrays constant-bounded. */
#define XREF_FETCH_MAX_ITEMS 16
#define XREF_FETCH_MAX_DEREFS 4
#define XREF_FILTER_MAX_INSNS 32

/* :string fetches. A probe reads at most XREF_FETCH_MAX_STRINGS of them,
 * each into its own string slot of XREF_STRING_BUFFER_BYTES: the bound (at
 * most XREF_STRING_MAX_BYTES) plus 2 bytes, the one that tells a string
 * of exactly `bound` bytes from a longer one and its NUL, rounded up to 8.
 * A record carries every slot, so these bound its size: 4 x 264 bytes. */
#define XREF_FETCH_MAX_STRINGS 4
#define XREF_STRING_MAX_BYTES 256
#define XREF_STRING_DEFAULT_BYTES 64
#define XREF_STRING_BUFFER_BYTES 264
/* A string fetch's value: the bytes read before the NUL (at most the
 * bound), with this bit set when there was no NUL within the bound. */
#define XREF_STRING_CUT (1ull << 32)
#define XREF_STRING_LENGTH_MASK 0xffffffffull

/* One value fetched at a probe hit: read the register at regs_offset in
 * struct pt_regs; then deref_count times, read the 8-byte pointer at
 * (value + deref_offsets[i]), innermost first, except that the last read
 * reads `width` bytes. Finally keep the low `width` bytes and zero-extend,
 * or sign-extend when is_signed, to 64 bits. So "+8(+16(%di)):u32" is
 * {regs_offset = offsetof(pt_regs, di), deref_count = 2,
 *  deref_offsets = {16, 8}, width = 4}.
 * A string (string_slot != 0), as the kernel's uprobe events read one: the
 * last dereference's address is where the string starts, read up to its
 * NUL or string_bound bytes into string slot string_slot - 1; the value is
 * its length, plus XREF_STRING_CUT when it was longer. "+0(%di):string" is
 * the string di points at. */
struct xref_fetch {
  __u16 regs_offset;  /* byte offset into x86-64 struct pt_regs */
  __u8 deref_count;   /* 0..XREF_FETCH_MAX_DEREFS */
  __u8 width;         /* 1, 2, 4 or 8 bytes */
  __u8 is_signed;     /* 1: sign-extend from width; 0: zero-extend */
  /* An index register added to the base before the first dereference, as
   * in `call [rdx + 8*rax]`: its pt_regs offset / 8, plus 1 (0: none), and
   * its scale (1, 2, 4 or 8). Only the helper's own fetches use it. */
  __u8 index_word_plus_one;
  __u8 index_scale;
  __u8 string_slot;   /* 0: a number; k + 1: a string, read into string slot k */
  __s32 deref_offsets[XREF_FETCH_MAX_DEREFS]; /* 32-bit like the kernel's fetch_insn offset */
  __u16 string_bound; /* a string: at most this many bytes, 1..XREF_STRING_MAX_BYTES */
  __u16 reserved[3];
};

/* Filter instruction targets: the index of a later instruction, or one of
 * these. Jumps only go forward, so a program of N instructions finishes in at
 * most N steps. */
#define XREF_FILTER_ACCEPT 0xfe
#define XREF_FILTER_REJECT 0xfd
/* rhs_slot value meaning "compare against `constant`". */
#define XREF_FILTER_CONSTANT_SLOT 0xff

/* Comparison operators (xref_filter_insn.op). */
#define XREF_FILTER_OP_EQ 0
#define XREF_FILTER_OP_NE 1
#define XREF_FILTER_OP_LT 2
#define XREF_FILTER_OP_LE 3
#define XREF_FILTER_OP_GT 4
#define XREF_FILTER_OP_GE 5
/* String comparisons: lhs_slot is a string fetch read into string slot
 * string_slot, `constant` the index of a string of the program. EQ: the
 * same bytes, not cut; PREFIX: the string starts with the program's. */
#define XREF_FILTER_OP_STR_EQ 6
#define XREF_FILTER_OP_STR_PREFIX 7
/* Strings a filter compares with, each at most XREF_STRING_MAX_BYTES. */
#define XREF_FILTER_MAX_STRINGS 4

/* One step: compare fetched value lhs_slot with fetched value rhs_slot (or
 * with `constant`), as signed or unsigned 64-bit numbers; continue at
 * on_true or on_false. Slots index the fetch list. An instruction whose two
 * targets are equal is an unconditional jump. */
struct xref_filter_insn {
  __u8 lhs_slot;
  __u8 rhs_slot; /* or XREF_FILTER_CONSTANT_SLOT */
  __u8 op;       /* XREF_FILTER_OP_* */
  __u8 is_signed;
  __u8 on_true;  /* later index, XREF_FILTER_ACCEPT or XREF_FILTER_REJECT */
  __u8 on_false;
  __u8 string_slot; /* XREF_FILTER_OP_STR_*: the string slot of lhs_slot's fetch */
  __u8 reserved;
  __u64 constant;
};

/* A whole filter; execution starts at insns[0]. insn_count == 0 accepts every
 * hit, so a zero-filled map value means "no filter". Any malformed step
 * (index or slot out of range, backward jump, unknown op) rejects. */
struct xref_filter_program {
  __u32 insn_count;
  __u32 reserved;
  struct xref_filter_insn insns[XREF_FILTER_MAX_INSNS];
  __u32 string_lengths[XREF_FILTER_MAX_STRINGS];
  /* zero after each string's length: compared 8 bytes at a time */
  __u8 strings[XREF_FILTER_MAX_STRINGS][XREF_STRING_MAX_BYTES];
};

#ifdef __cplusplus
#define XREF_ABI_STATIC_ASSERT static_assert
#else
#define XREF_ABI_STATIC_ASSERT _Static_assert
#endif

XREF_ABI_STATIC_ASSERT(sizeof(struct xref_fetch) == 32, "xref_fetch layout");
XREF_ABI_STATIC_ASSERT(sizeof(struct xref_filter_insn) == 16, "xref_filter_insn layout");
XREF_ABI_STATIC_ASSERT(sizeof(struct xref_filter_program) ==
                           8 + 16 * XREF_FILTER_MAX_INSNS + (4 + XREF_STRING_MAX_BYTES) * XREF_FILTER_MAX_STRINGS,
                       "xref_filter_program layout");
XREF_ABI_STATIC_ASSERT(XREF_STRING_BUFFER_BYTES >= XREF_STRING_MAX_BYTES + 2 && XREF_STRING_BUFFER_BYTES % 8 == 0,
                       "a string slot holds the bound, one byte more and the NUL, in whole words");
/* Instruction indices must never collide with the special targets. */
XREF_ABI_STATIC_ASSERT(XREF_FILTER_MAX_INSNS < XREF_FILTER_REJECT, "targets fit in a __u8");

#undef XREF_ABI_STATIC_ASSERT

#endif /* XREF_BPF_ABI_H */
