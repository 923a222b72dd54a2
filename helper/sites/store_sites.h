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
// Never probed, each counted by reason (StoreSiteCounts): EVEX-encoded
// instructions (the kernel runs a uprobe on them wrongly here, see
// docs/watch.md), instructions Capstone and Zydis cannot decode, fs/gs-
// segment stores (thread-local data: the segment base is not in pt_regs).
// Pruned (known not to reach any watched range): stack stores (rsp/rbp-based,
// push, call) while no range lies on a thread stack; rip-relative stores
// whose static target does not overlap a range that can be there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf_image.h"
#include "result.h"
#include "watch_abi.h"

namespace xref {

enum class StoreClass : uint8_t {
  plain,       // one write at base + index*scale + disp (rip-relative: disp is the static target VA)
  rep_stos,
  rep_movs,
  stack,       // rsp/rbp-based, push, call: writes this thread's stack
  rip_static,  // rip-relative: the target is a static VA (in `target_va`)
  unbounded,   // fxsave, xsave, ...: listed, never probed; also bts/btr/btc m, r (the register's bit
               // offset reaches any byte) and 32-bit addressing (0x67: the sum wraps at 4 GiB, which
               // base + index*scale + disp over 64-bit registers does not; none in libc, libstdc++, gdb)
  evex,        // never probed
  segment,     // fs/gs: never probed
  undecodable, // never probed
};

struct StoreSite {
  uint64_t va = 0;           // the instruction's static VA
  uint8_t size = 0;          // its length in bytes
  StoreClass store_class = StoreClass::plain;
  uint64_t target_va = 0;    // rip_static: the static VA written
  xref_watch_site operand{}; // for the BPF table; rip-relative: base none, disp = static target (made live at attach)
  bool needs_after = false;  // the new value is only known after it ran: an after-probe at va + size
  // needs_after: the instruction at va + size lies in the same function, was
  // decoded, and is not EVEX, so an after-probe may go there. When false the
  // engine reads the new value at the next drain instead (never a probe on EVEX).
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
  uint32_t function = 0;     // index into StoreSiteTable::functions
  std::string text;          // Intel syntax as disassembled: "mov dword ptr [rbx + 8], eax"
};

struct StoreFunction {
  std::string name;          // as ElfImage names it (mangled; "fde_<hex>" in a stripped image)
  uint64_t start = 0;
  uint64_t size = 0;
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
  uint64_t undecodable = 0;  // bytes skipped where neither decoder could continue
  uint64_t address32 = 0;    // of unbounded: 32-bit addressing (0x67)
  uint64_t functions_unreadable = 0;  // functions given whose bytes are not file-backed (not disassembled)
  uint64_t after_unprobeable = 0;     // of probed: needs_after but !after_ok (new value read at a drain)
  uint64_t refused = 0;      // stores that would be probed but the kernel refuses (kernel_refuses_probe)
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

// Every store instruction of the functions in `functions` (start, size) of
// `image`.
Result<StoreSiteTable> find_store_sites(const ElfImage& image, const std::vector<const FunctionSymbol*>& functions);

// A watched range in the image's static VAs (a range in no module of the
// image: static_start == 0), and whether it may move (--follow).
struct StaticRange {
  uint64_t static_start = 0;
  uint64_t length = 0;
  bool on_stack = false;     // lies on some thread's stack
  bool may_move = false;     // a --follow target: it can be anywhere
};

// The indexes into table.sites that must be probed for `ranges`; fills
// table.counts' probed/pruned/refused numbers and table.after_only. Stack
// stores are pruned while no range is on a stack; rip-relative ones whose
// [target, target + width) overlaps no range of this image, unless a range
// may move; evex/segment/unbounded/undecodable stores are never probed.
std::vector<uint32_t> prune_store_sites(StoreSiteTable& table, const std::vector<StaticRange>& ranges);

}  // namespace xref
