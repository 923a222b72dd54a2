#include "sites/store_sites.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>

#include "code_reach.h"
#include "disassembly.h"
#include "sites/probe_site_check.h"
#include "x86_registers.h"
#include "x86_store.h"

namespace xref {
namespace {

bool starts_with(std::span<const uint8_t> bytes, size_t offset, std::span<const uint8_t> pattern) {
  return bytes.size() >= offset + pattern.size() &&
         std::memcmp(bytes.data() + offset, pattern.data(), pattern.size()) == 0;
}

// Whether the function sets rbp up as its frame pointer at entry: push rbp,
// then mov rbp, rsp (48 89 e5, or 48 8b ec as some assemblers spell it),
// within its first instructions (gcc schedules other instructions between
// the two). Only then does an rbp-based store write this thread's stack
// frame; with -fomit-frame-pointer (gcc's and clang's -O2 default) rbp is one
// more general register and may point anywhere, so its stores are plain. A
// frame pointer set up later is missed, which leaves its stores plain:
// probed, never wrongly pruned.
bool keeps_frame_pointer(const X86StoreDecoder& decoder, std::span<const uint8_t> bytes, uint64_t start) {
  constexpr size_t kPrologueInstructions = 8;
  constexpr std::array<uint8_t, 3> kMovRbpRsp = {0x48, 0x89, 0xe5};
  constexpr std::array<uint8_t, 3> kMovRbpRspAlt = {0x48, 0x8b, 0xec};
  bool pushed_rbp = false;
  size_t offset = 0;
  for (size_t i = 0; i < kPrologueInstructions && offset < bytes.size(); ++i) {
    const auto store = decoder.decode(bytes.subspan(offset), start + offset);
    if (!store) return false;
    if (pushed_rbp && store->size == kMovRbpRsp.size() &&
        (starts_with(bytes, offset, kMovRbpRsp) || starts_with(bytes, offset, kMovRbpRspAlt))) {
      return true;
    }
    if (store->stack_push && store->value.kind == StoreValue::Kind::register_ && store->value.reg == Register::bp) {
      pushed_rbp = true;
    }
    offset += store->size;
  }
  return false;
}

uint16_t offset_of(const std::optional<Register>& reg) {
  return reg ? register_pt_regs_offset(*reg) : static_cast<uint16_t>(XREF_WATCH_NO_REG);
}

StoreClass classify(const StoreInstruction& store, bool frame_pointer) {
  const MemoryDestination& destination = store.destination;
  if (store.evex) return StoreClass::evex;
  if (destination.segment != MemoryDestination::Segment::none) return StoreClass::segment;
  if (store.unbounded || destination.address32) return StoreClass::unbounded;
  if (store.stack_push || destination.base == Register::sp ||
      (frame_pointer && destination.base == Register::bp)) {
    return StoreClass::stack;
  }
  if (destination.rip_relative) return StoreClass::rip_static;
  if (store.rep) return store.stos ? StoreClass::rep_stos : StoreClass::rep_movs;
  return StoreClass::plain;
}

// The BPF operand (shared/watch_abi.h) of a decoded store.
xref_watch_site operand_of(const StoreInstruction& store, StoreClass store_class) {
  const MemoryDestination& destination = store.destination;
  xref_watch_site site{};
  site.kind = store_class == StoreClass::rep_stos   ? XREF_STORE_REP_STOS
              : store_class == StoreClass::rep_movs ? XREF_STORE_REP_MOVS
                                                    : XREF_STORE_PLAIN;
  site.base_offset = destination.rip_relative ? static_cast<uint16_t>(XREF_WATCH_NO_REG) : offset_of(destination.base);
  site.index_offset = offset_of(destination.index);
  site.scale = destination.index ? destination.scale : 1;
  site.width = destination.width <= UINT8_MAX ? static_cast<uint8_t>(destination.width) : 0;
  // rip-relative: the static target; the engine adds the load bias at attach.
  site.disp = destination.rip_relative ? static_cast<int64_t>(destination.target) : destination.disp;
  site.source_offset = XREF_WATCH_NO_REG;
  switch (store.value.kind) {
    case StoreValue::Kind::register_:
      site.source = XREF_SOURCE_REGISTER;
      site.source_offset = register_pt_regs_offset(store.value.reg);
      site.source_shift = store.value.shift;
      break;
    case StoreValue::Kind::immediate:
      site.source = XREF_SOURCE_IMMEDIATE;
      site.immediate = store.value.immediate;
      break;
    case StoreValue::Kind::after: site.source = XREF_SOURCE_AFTER; break;
  }
  return site;
}

bool probeable_class(StoreClass store_class) {
  return store_class == StoreClass::plain || store_class == StoreClass::rep_stos ||
         store_class == StoreClass::rep_movs || store_class == StoreClass::stack ||
         store_class == StoreClass::rip_static;
}

void count(StoreSiteCounts& counts, const StoreSite& site, const StoreInstruction& store) {
  ++counts.stores;
  switch (site.store_class) {
    case StoreClass::evex: ++counts.evex; break;
    case StoreClass::segment: ++counts.segment; break;
    case StoreClass::unbounded:
      ++counts.unbounded;
      if (store.destination.address32) ++counts.address32;
      break;
    default: break;
  }
}

// Functions may overlap (a sized symbol enclosing a label, a symbol and an
// FDE range): a store is listed once, for the first function that found it.
// Functions come sorted by start and mostly apart, so the VAs listed are
// only remembered once one overlaps what was swept before.
class ListedOnce {
 public:
  void enter_function(const StoreSiteTable& table, uint64_t start, uint64_t end) {
    if (start < swept_end_ && !remembering_) {
      for (const StoreSite& site : table.sites) listed_.insert(site.va);
      remembering_ = true;
    }
    swept_end_ = std::max(swept_end_, end);
  }
  // False when `va` was listed already; remembers it once remembering.
  bool first(uint64_t va) { return !remembering_ || listed_.insert(va).second; }

 private:
  uint64_t swept_end_ = 0;
  bool remembering_ = false;
  std::unordered_set<uint64_t> listed_;
};

struct FunctionSweep {
  const ElfImage& image;
  const X86StoreDecoder& decoder;
  StoreSiteTable& table;
  ListedOnce& seen;
  std::vector<uint64_t>& branch_targets;  // of every function swept: direct jumps, jccs and calls
  uint32_t function = 0;
  std::vector<FlowStep> steps{};          // this function's instructions
  bool indirect_jump = false;             // this function jumps through a register or memory

  // Every store of [start, start + bytes.size()). A store whose new value is
  // known only afterwards waits for the next instruction to say whether an
  // after-probe may go there.
  void run(std::span<const uint8_t> bytes, uint64_t start) {
    const bool frame_pointer = keeps_frame_pointer(decoder, bytes, start);
    std::optional<size_t> waiting_after;  // index into table.sites
    size_t offset = 0;
    while (offset < bytes.size()) {
      const uint64_t va = start + offset;
      const auto rest = bytes.subspan(offset);
      const std::optional<StoreInstruction> store = decoder.decode(rest, va);
      if (waiting_after) {
        table.sites[*waiting_after].after_ok = store && !store->evex && !kernel_refuses_uprobe(image, va);
      }
      waiting_after.reset();
      if (!store) {
        offset += skip_undecodable(rest, va);
        continue;
      }
      offset += store->size;
      steps.push_back(FlowStep{va, store->flow, store->branch_target});
      if (store->branch_target != 0) branch_targets.push_back(store->branch_target);
      indirect_jump = indirect_jump || store->flow == Flow::indirect_jump;
      if (!store->writes_memory || !seen.first(va)) continue;
      StoreSite site;
      site.va = va;
      site.size = store->size;
      site.function = function;
      site.store_class = classify(*store, frame_pointer);
      site.target_va = site.store_class == StoreClass::rip_static ? store->destination.target : 0;
      site.operand = operand_of(*store, site.store_class);
      site.immediate_is_static_va = store->value.return_address;
      site.kernel_refuses_probe = kernel_refuses_uprobe(image, va);
      site.needs_after = probeable_class(site.store_class) && (site.operand.source == XREF_SOURCE_AFTER ||
                                                               site.store_class == StoreClass::rep_movs);
      site.text = decoder.text(rest.first(store->size), va);
      count(table.counts, site, *store);
      table.sites.push_back(std::move(site));
      if (table.sites.back().needs_after) waiting_after = table.sites.size() - 1;
    }
  }

  // Bytes Zydis cannot decode: Capstone's length when it knows one (it has
  // never been seen to), else one byte, resynchronising on the next as
  // disassembly.cpp does. Each gap is listed as one undecodable site.
  size_t skip_undecodable(std::span<const uint8_t> rest, uint64_t va) {
    const size_t length = decoder.capstone_length(rest, va).value_or(1);
    table.functions[function].complete = false;
    if (!seen.first(va)) return length;
    table.counts.undecodable += length;
    if (!table.sites.empty() && table.sites.back().store_class == StoreClass::undecodable &&
        table.sites.back().va + table.sites.back().size == va && table.sites.back().size + length <= UINT8_MAX) {
      table.sites.back().size = static_cast<uint8_t>(table.sites.back().size + length);
      return length;
    }
    StoreSite site;
    site.va = va;
    site.size = static_cast<uint8_t>(length);
    site.function = function;
    site.store_class = StoreClass::undecodable;
    site.operand.base_offset = site.operand.index_offset = site.operand.source_offset = XREF_WATCH_NO_REG;
    table.sites.push_back(std::move(site));
    return length;
  }
};

// Where a function's first instruction is: its start, except for the FDE
// range of a signal frame, which starts one byte early (eh_frame.h); decoded
// from there, that byte would swallow the first real instruction.
uint64_t code_start(const ElfImage& image, const FunctionSymbol& function) {
  if (!function.is_fde_range()) return function.start;
  auto record = image.fde_record(function.start);
  const bool early = record && record->cie.signal_frame && record->fde.range.start == function.start;
  return early ? function.start + 1 : function.start;
}

// Whether the unwinder may enter the function at a landing pad no branch
// leads to: its FDE's CIE names an LSDA encoding.
bool may_have_landing_pads(const ElfImage& image, uint64_t start) {
  auto record = image.fde_record(start);
  return record && record->cie.has_lsda;
}

// A function whose every path is known: every byte decoded, no jump through
// a register or memory (a jump table's cases are reached by no direct
// branch), no landing pads. Its stores that no path reaches are data or
// dead code.
struct ReachCheck {
  size_t first_site = 0;  // its stores in table.sites: [first_site, end_site)
  size_t end_site = 0;
  std::vector<FlowStep> steps;
};

// Marks the check's stores no path reaches, counting them when `count`;
// whether there were any.
bool mark_unreachable(StoreSiteTable& table, const ReachCheck& check, std::span<const uint64_t> entries, bool count) {
  const std::vector<bool> reachable = reachable_steps(check.steps, entries);
  bool any = false;
  for (size_t i = check.first_site; i < check.end_site; ++i) {
    StoreSite& site = table.sites[i];
    auto step = std::lower_bound(check.steps.begin(), check.steps.end(), site.va,
                                 [](const FlowStep& s, uint64_t va) { return s.va < va; });
    site.unreachable = step != check.steps.end() && step->va == site.va && !reachable[step - check.steps.begin()];
    any = any || site.unreachable;
    if (site.unreachable && count) ++table.counts.unreachable;
  }
  return any;
}

}  // namespace

Result<StoreSiteTable> find_store_sites(const ElfImage& image, const std::vector<const FunctionSymbol*>& functions) {
  const X86StoreDecoder decoder;
  if (!decoder.failure().empty()) return make_error(ErrorCode::internal, decoder.failure());
  StoreSiteTable table;
  ListedOnce seen;
  std::vector<uint64_t> branch_targets;
  std::vector<ReachCheck> checks;
  // About one store in six instructions of four bytes (libc: 52,000 in 1.8 MB).
  uint64_t code_bytes = 0;
  for (const FunctionSymbol* function : functions) code_bytes += function != nullptr ? function->size : 0;
  table.sites.reserve(code_bytes / 32);
  for (const FunctionSymbol* function : functions) {
    if (function == nullptr) continue;
    auto end = function_code_end(image, *function);
    const uint64_t start = code_start(image, *function);
    const auto bytes = end && start < *end ? image.bytes_at(start, *end - start) : std::nullopt;
    if (!bytes || bytes->empty()) {
      ++table.counts.functions_unreadable;
      continue;
    }
    const auto index = static_cast<uint32_t>(table.functions.size());
    table.functions.push_back(StoreFunction{function->name, start, bytes->size()});
    ++table.counts.functions;
    const size_t first_site = table.sites.size();
    seen.enter_function(table, start, start + bytes->size());
    FunctionSweep sweep{image, decoder, table, seen, branch_targets, index};
    sweep.run(*bytes, start);
    if (table.functions[index].complete && !sweep.indirect_jump && first_site != table.sites.size() &&
        !may_have_landing_pads(image, function->start)) {
      // Its own paths first; the rare function with stores they miss is
      // checked again once every function's branches are known.
      ReachCheck check{first_site, table.sites.size(), std::move(sweep.steps)};
      if (mark_unreachable(table, check, {}, false)) checks.push_back(std::move(check));
    }
  }
  // Other functions' branches count: a .cold part jumps back into its parent.
  std::sort(branch_targets.begin(), branch_targets.end());
  branch_targets.erase(std::unique(branch_targets.begin(), branch_targets.end()), branch_targets.end());
  for (const ReachCheck& check : checks) mark_unreachable(table, check, branch_targets, true);
  std::sort(table.sites.begin(), table.sites.end(), [](const StoreSite& a, const StoreSite& b) { return a.va < b.va; });
  return table;
}

std::vector<uint32_t> prune_store_sites(StoreSiteTable& table, const std::vector<StaticRange>& ranges) {
  // A stack store can only reach a range on a thread's stack.
  const bool any_on_stack = std::any_of(ranges.begin(), ranges.end(), [](const StaticRange& r) { return r.on_stack; });
  // A rip-relative store writes this image's own data at a VA fixed at link
  // time (plus the load bias), so it reaches only a range that lies in this
  // image's mappings, which the caller gives as a static range. A range in
  // no module of this image (heap, anonymous memory, another module:
  // static_start == 0) is out of its reach. A range that may move (--follow)
  // can later lie anywhere, this image's data included: then no rip-relative
  // store is pruned.
  const bool any_may_move = std::any_of(ranges.begin(), ranges.end(), [](const StaticRange& r) { return r.may_move; });
  auto reaches_static = [&](const StoreSite& site) {
    if (any_may_move) return true;
    const uint64_t start = site.target_va;
    const uint64_t end = start + std::max<uint64_t>(site.operand.width, 1);
    return std::any_of(ranges.begin(), ranges.end(), [&](const StaticRange& r) {
      return r.static_start != 0 && r.length != 0 && start < r.static_start + r.length && r.static_start < end;
    });
  };

  StoreSiteCounts& counts = table.counts;
  counts.probed = counts.pruned_stack = counts.pruned_static = counts.after_unprobeable = 0;
  counts.refused = counts.incomplete = counts.unreached = 0;
  table.after_only.clear();
  std::vector<uint32_t> probed;
  for (uint32_t i = 0; i < table.sites.size(); ++i) {
    const StoreSite& site = table.sites[i];
    switch (site.store_class) {
      case StoreClass::stack:
        if (!any_on_stack) {
          ++counts.pruned_stack;
          continue;
        }
        break;
      case StoreClass::rip_static:
        if (!reaches_static(site)) {
          ++counts.pruned_static;
          continue;
        }
        break;
      case StoreClass::plain:
      case StoreClass::rep_stos:
      case StoreClass::rep_movs: break;
      case StoreClass::unbounded:
      case StoreClass::evex:
      case StoreClass::segment:
      case StoreClass::undecodable: continue;  // never probed; counted by find_store_sites
    }
    if (!table.functions[site.function].complete) {
      ++counts.incomplete;
      continue;
    }
    if (site.unreachable) {
      ++counts.unreached;
      continue;
    }
    if (site.kernel_refuses_probe) {
      ++counts.refused;
      if (site.after_ok) table.after_only.push_back(i);
      continue;
    }
    probed.push_back(i);
    if (site.needs_after && !site.after_ok) ++counts.after_unprobeable;
  }
  counts.probed = probed.size();
  return probed;
}

}  // namespace xref
