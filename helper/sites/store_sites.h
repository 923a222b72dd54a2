// The instructions that can write memory, found by disassembly: the store
// sites of `xref watch --backend stores`. A uprobe on each one that can
// reach a watched range computes its effective address in BPF from the
// registers and the operand below (shared/watch_abi.h) and compares it with
// the ranges before the store runs.
//
// What is a store: every instruction with a memory destination - mov, movs*
// and stos* (rep too), the read-modify-write ALU forms (add/sub/and/or/xor/
// inc/dec/neg/not/shl..., lock-prefixed or not), xchg, cmpxchg, xadd, setcc
// m8, cmovcc is not (register destination), bt[s|r|c] m, vector stores that
// are not EVEX-encoded (movups/movaps/movdqu/vmovdqu/movq/movd/pextr*,
// vmaskmov*), and fxsave/xsave-style saves (listed, never probed: unbounded
// length). push/call write below rsp: they are stack stores.
//
// Decoded by Zydis (shared/x86_store.h), whose operand actions are exact;
// the text is Capstone's, as elsewhere in xref.
//
// Never probed, each counted by reason (StoreSiteCounts): EVEX-encoded
// instructions (the kernel runs a uprobe on them wrongly here, see
// docs/watch.md), bytes Zydis cannot decode, fs/gs-segment stores
// (thread-local data: the segment base is not in pt_regs), unbounded ones,
// stores the kernel refuses a uprobe on (a lock prefix: seen at their next
// instruction instead, StoreSiteTable::after_only), stores of a function
// with undecodable bytes, and stores no path reaches (data read as code).
// Pruned (known not to reach any watched range): stack stores while no range
// lies on a thread stack; rip-relative stores whose static target does not
// overlap a range that can be there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf_image.h"
#include "result.h"
#include "watch_abi.h"

namespace xref {

enum class StoreClass : uint8_t {
  plain,       // one write at base + index*scale + disp; movs/stos without rep: base rdi
  rep_stos,    // rcx elements of `width` bytes from rdi, the value rax
  rep_movs,    // rcx elements of `width` bytes copied from rsi to rdi, the value known after
               // A uprobe on either fires once per element, not once (measured here: 18 hits for
               // a rep stosq with rcx = 18, 511 for rcx = 511, one at the next instruction): the
               // kernel single-steps the copy, the CPU traps after each iteration with rip still
               // on it, and the probe is hit again. Each hit writes one element at rdi (rcx > 0;
               // none when rcx == 0), whose new bytes are rax's (stos) or those at rsi (movs).
  stack,       // writes this thread's stack: rsp-based, push, call, pushf, enter, and rbp-based in a
               // function that sets rbp up as its frame pointer at entry (push rbp ... mov rbp, rsp);
               // elsewhere rbp is a general register and its stores are plain
  rip_static,  // rip-relative: the target is a static VA (`target_va`, and operand.disp with no base)
  unbounded,   // fxsave, xsave, ...: listed, never probed; also bts/btr/btc m, r (the register's bit
               // offset reaches any byte) and 32-bit addressing (0x67: the sum wraps at 4 GiB, which
               // base + index*scale + disp over 64-bit registers does not; none in libc, libstdc++, gdb)
  evex,        // never probed
  segment,     // fs/gs: never probed
  undecodable, // bytes Zydis cannot decode, one site per gap (`size` bytes; a store or not): never probed
};

struct StoreSite {
  uint64_t va = 0;           // the instruction's static VA
  uint8_t size = 0;          // its length in bytes
  StoreClass store_class = StoreClass::plain;
  uint64_t target_va = 0;    // rip_static: the static VA written
  xref_watch_site operand{}; // for the BPF table; rip-relative: base none, disp = static target (made live at attach)
  bool needs_after = false;  // the new value is only known after it ran: an after-probe at va + size
  // needs_after: the instruction at va + size lies in the same function, was
  // decoded, is not EVEX and the kernel takes a uprobe there, so an
  // after-probe may go there. When false the engine reads the new value at
  // the next drain instead (never a probe on EVEX).
  bool after_ok = false;
  // call (a stack store): operand.immediate is the return address as a
  // static VA of this image, made live at attach like a rip-relative disp.
  bool immediate_is_static_va = false;
  // The kernel will not put a uprobe here: a lock prefix (every lock add/
  // xadd/cmpxchg/or/and...) or an es/cs/ss/ds override (sites/
  // probe_site_check.h; measured here: a uprobe on `lock add` never fires,
  // one on `xchg`, locked without the prefix, does). Never in
  // prune_store_sites' list; when after_ok its write can still be seen at
  // the after-probe alone (StoreSiteTable::after_only): the new bytes read
  // there, the old ones derived from the registers where the instruction
  // leaves them (xadd, cmpxchg) or not known.
  bool kernel_refuses_probe = false;
  // No path of its function reaches it (shared/code_reach.h): after a ret or
  // jmp, and no branch or call anywhere leads there. Data the sweep read as
  // code, or dead code: never probed. Only decided in functions whose every
  // path is known (no undecodable byte, no jump through a register or
  // memory, no LSDA: landing pads are entered by the unwinder alone);
  // elsewhere false.
  bool unreachable = false;
  uint32_t function = 0;     // index into StoreSiteTable::functions
  std::string text;          // Intel syntax as disassembled: "mov dword ptr [rbx + 8], eax"
};

struct StoreFunction {
  std::string name;          // as ElfImage names it (mangled; "fde_<hex>" in a stripped image)
  uint64_t start = 0;
  uint64_t size = 0;
  // Every byte decoded. A function with undecodable bytes holds data the
  // sweep read as code (OpenSSL's assembly keeps strings in its functions),
  // so its "stores" may be data: a uprobe there would write an int3 into
  // bytes the program reads. None of its stores is probed (counts.incomplete).
  bool complete = true;
};

struct StoreSiteCounts {
  uint64_t functions = 0;    // functions disassembled
  uint64_t stores = 0;       // store instructions found
  uint64_t probed = 0;
  uint64_t pruned_stack = 0;
  uint64_t pruned_static = 0;
  uint64_t evex = 0;
  uint64_t segment = 0;
  uint64_t unbounded = 0;
  uint64_t undecodable = 0;  // bytes skipped where Zydis could not decode (the sweep resynchronises)
  uint64_t address32 = 0;    // of unbounded: 32-bit addressing (0x67)
  uint64_t functions_unreadable = 0;  // functions given whose bytes are not file-backed (not disassembled)
  uint64_t after_unprobeable = 0;     // of probed: needs_after but !after_ok (new value read at a drain)
  uint64_t refused = 0;      // stores that would be probed but the kernel refuses (kernel_refuses_probe)
  uint64_t incomplete = 0;   // stores that would be probed but lie in a function that is not complete
  uint64_t unreachable = 0;  // stores no path reaches (StoreSite::unreachable), found
  uint64_t unreached = 0;    // of those, stores that would be probed (prune_store_sites)
};

struct StoreSiteTable {
  std::vector<StoreFunction> functions;
  std::vector<StoreSite> sites;  // every store, in VA order; prune_store_sites says which are probed
  StoreSiteCounts counts;
  // Filled by prune_store_sites: indexes of stores that can reach a range
  // but the kernel refuses to probe (kernel_refuses_probe), whose after
  // site can be probed (after_ok). Not in the probed list.
  std::vector<uint32_t> after_only;
};

// Every store instruction of the functions in `functions` (start, size; a
// size-0 symbol bounded as disassemble() bounds it) of `image`, each listed
// once where functions overlap. Fails only when the decoders cannot start.
Result<StoreSiteTable> find_store_sites(const ElfImage& image, const std::vector<const FunctionSymbol*>& functions);

// A watched range in the image's static VAs (a range in no module of the
// image: static_start == 0), and whether it may move (--follow).
struct StaticRange {
  uint64_t static_start = 0;
  uint64_t length = 0;
  bool on_stack = false;     // lies on some thread's stack
  bool may_move = false;     // a --follow target: it can be anywhere
};

// The indexes into table.sites that must be probed for `ranges`, in VA
// order; fills table.counts' probed, pruned_*, refused, incomplete,
// unreached and after_unprobeable, and table.after_only. Stack stores are
// pruned while no range is on a stack; rip-relative ones whose [target,
// target + width) overlaps no range of this image, unless a range may move.
// evex/segment/unbounded/undecodable stores, stores of an incomplete
// function and unreachable ones are never probed.
std::vector<uint32_t> prune_store_sites(StoreSiteTable& table, const std::vector<StaticRange>& ranges);

}  // namespace xref
