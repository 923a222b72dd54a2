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

/* One value fetched at a probe hit: read the register at regs_offset in
 * struct pt_regs; then deref_count times, read the 8-byte pointer at
 * (value + deref_offsets[i]), innermost first, except that the last read
 * reads `width` bytes. Finally keep the low `width` bytes and zero-extend,
 * or sign-extend when is_signed, to 64 bits. So "+8(+16(%di)):u32" is
 * {regs_offset = offsetof(pt_regs, di), deref_count = 2,
 *  deref_offsets = {16, 8}, width = 4}. */
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
  __u8 reserved;
  __s32 deref_offsets[XREF_FETCH_MAX_DEREFS]; /* 32-bit like the kernel's fetch_insn offset */
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
  __u8 reserved[2];
  __u64 constant;
};

/* A whole filter; execution starts at insns[0]. insn_count == 0 accepts every
 * hit, so a zero-filled map value means "no filter". Any malformed step
 * (index or slot out of range, backward jump, unknown op) rejects. */
struct xref_filter_program {
  __u32 insn_count;
  __u32 reserved;
  struct xref_filter_insn insns[XREF_FILTER_MAX_INSNS];
};

#ifdef __cplusplus
#define XREF_ABI_STATIC_ASSERT static_assert
#else
#define XREF_ABI_STATIC_ASSERT _Static_assert
#endif

XREF_ABI_STATIC_ASSERT(sizeof(struct xref_fetch) == 24, "xref_fetch layout");
XREF_ABI_STATIC_ASSERT(sizeof(struct xref_filter_insn) == 16, "xref_filter_insn layout");
XREF_ABI_STATIC_ASSERT(sizeof(struct xref_filter_program) == 8 + 16 * XREF_FILTER_MAX_INSNS,
                       "xref_filter_program layout");
/* Instruction indices must never collide with the special targets. */
XREF_ABI_STATIC_ASSERT(XREF_FILTER_MAX_INSNS < XREF_FILTER_REJECT, "targets fit in a __u8");

#undef XREF_ABI_STATIC_ASSERT

#endif /* XREF_BPF_ABI_H */
