#include "watch/plan.h"

#include <algorithm>
#include <cstring>

#include "data_symbols.h"
#include "hex.h"
#include "parse_error_render.h"
#include "watch/address_spec.h"
#include "watch/detail.h"
#include "watch/process_memory.h"
#include "watch_abi.h"

namespace xref {
namespace {

// A watched range is at most this long: its bytes are read at every drain.
constexpr uint64_t kMaxRangeBytes = 1u << 20;

struct FoundSymbol {
  const Module* module = nullptr;
  DataSymbol symbol;
};

Result<FoundSymbol> find_data_symbol(const Target& target, const AddressSpec& spec) {
  std::vector<const Module*> modules;
  if (!spec.module.empty()) {
    const Module* module = target.space.find_module(spec.module);
    if (module == nullptr) {
      return make_error(ErrorCode::unknown_symbol,
                        "watch " + quoted_text(spec.spelled) + ": process " + std::to_string(target.process.pid()) +
                            " has no module " + quoted_text(spec.module),
                        "xref maps --pid " + std::to_string(target.process.pid()) + " lists its modules");
    }
    modules.push_back(module);
  } else {
    if (const Module* main = target.space.main_module()) modules.push_back(main);
    for (const Module& module : target.space.modules()) {
      if (!module.main_executable) modules.push_back(&module);
    }
  }
  for (const Module* module : modules) {
    auto image = target.space.image(*module);
    if (!image) continue;
    const DataSymbols symbols = DataSymbols::read(**image);
    for (const DataSymbol* symbol : symbols.named(spec.symbol)) {
      if (!symbol->tls) return FoundSymbol{module, *symbol};
    }
  }
  return make_error(ErrorCode::unknown_symbol,
                    "watch " + quoted_text(spec.spelled) + ": no data symbol " + quoted_text(spec.symbol) + " in " +
                        (spec.module.empty() ? std::string("the process's modules") : quoted_text(spec.module)),
                    "nm -C EXE | grep -i ' [bdgrs] ' lists the objects it names; a stripped executable names none "
                    "of its own: give the live address (0x..:LEN)");
}

// The mapping holding `address`, or nullptr.
const MapEntry* mapping_of(const Target& target, uint64_t address) {
  for (const MapEntry& entry : target.space.maps()) {
    if (entry.contains(address)) return &entry;
  }
  return nullptr;
}

// [address, address + length) lies in writable data: refused with the
// error that names what it is instead.
Result<const MapEntry*> check_writable(const Target& target, const std::string& spelled, uint64_t address,
                                       uint64_t length) {
  const std::string what = "watch " + quoted_text(spelled);
  if (length == 0) {
    return make_error(ErrorCode::bad_length, what + ": a length of 0", "give 1 or more bytes: ADDR:8, or leave :LEN out");
  }
  if (length > kMaxRangeBytes) {
    return make_error(ErrorCode::bad_length,
                      what + ": " + std::to_string(length) + " bytes; one range is at most " +
                          std::to_string(kMaxRangeBytes),
                      "watch the part that matters, or several ranges");
  }
  const MapEntry* mapping = mapping_of(target, address);
  if (mapping == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      what + ": " + to_hex(address) + " is in no mapping of process " +
                          std::to_string(target.process.pid()),
                      "xref maps --pid " + std::to_string(target.process.pid()) + " lists them; a live address, not "
                      "a static VA from nm (or name the symbol)");
  }
  if (mapping->executable()) {
    return make_error(ErrorCode::not_data,
                      what + ": " + to_hex(address) + " is code (" + mapping->label() + ", " + mapping->perms + ")",
                      "watch data: a variable, a struct, a buffer; to count an instruction's hits use xref probe");
  }
  if (!mapping->writable()) {
    return make_error(ErrorCode::read_only_address,
                      what + ": " + to_hex(address) + " is in a read-only mapping (" + mapping->label() + ", " +
                          mapping->perms + "): nothing can write it",
                      "watch a writable variable (.data, .bss, heap, stack)");
  }
  // Contiguous writable mappings may hold the rest.
  uint64_t end = mapping->end;
  for (const MapEntry& entry : target.space.maps()) {
    if (entry.start == end && entry.writable() && !entry.executable()) end = entry.end;
  }
  if (address + length > end || address + length < address) {
    return make_error(ErrorCode::bad_length,
                      what + ": " + std::to_string(length) + " bytes from " + to_hex(address) + " run past the end of " +
                          mapping->label() + " at " + to_hex(end),
                      "give a length that stays inside it");
  }
  return mapping;
}

bool on_a_stack(const MapEntry& mapping, const std::vector<uint64_t>& stack_pointers) {
  if (mapping.path == "[stack]" || mapping.path.rfind("[stack:", 0) == 0) return true;
  return std::any_of(stack_pointers.begin(), stack_pointers.end(),
                     [&](uint64_t sp) { return mapping.contains(sp); });
}

// Names the range: its module and the data symbol it starts in.
void name_range(const Target& target, WatchRange& range) {
  const LiveAddress live = target.space.resolve_live(range.address);
  if (live.candidates.empty() || live.candidates.front().module == nullptr) {
    if (live.mapping) range.module = live.mapping->path;
    return;
  }
  const StaticCandidate& candidate = live.candidates.front();
  range.module = candidate.module->path;
  auto image = target.space.image(*candidate.module);
  if (!image) return;
  const DataSymbols symbols = DataSymbols::read(**image);
  if (const DataSymbol* symbol = symbols.containing(candidate.static_va)) {
    range.symbol = data_symbol_place(*symbol, candidate.static_va);
  }
}

struct Placed {
  uint64_t address = 0;
  uint64_t length = 0;
};

// An ADDR as typed: where it is and how long (LEN, --len, the symbol's
// size, else 8).
Result<Placed> place(const Target& target, const AddressSpec& spec, uint64_t default_length) {
  Placed placed;
  uint64_t symbol_length = 0;
  if (spec.live_address) {
    placed.address = *spec.live_address;
  } else {
    auto found = find_data_symbol(target, spec);
    if (!found) return found.error();
    // .bss is past the file's bytes: through the load bias, not a file offset.
    const auto bias = target.space.load_bias(*found->module);
    if (!bias) {
      return make_error(ErrorCode::address_unmapped,
                        "watch " + quoted_text(spec.spelled) + ": " + found->module->name() + " is not mapped as a whole");
    }
    placed.address = found->symbol.start + *bias + static_cast<uint64_t>(spec.offset);
    if (found->symbol.size > 0 && spec.offset >= 0 && static_cast<uint64_t>(spec.offset) < found->symbol.size) {
      symbol_length = found->symbol.size - static_cast<uint64_t>(spec.offset);
    }
  }
  placed.length = spec.length ? *spec.length : default_length != 0 ? default_length : symbol_length != 0 ? symbol_length : 8;
  return placed;
}

Result<WatchRange> checked_range(const Target& target, const std::string& spelled, uint64_t address, uint64_t length,
                                 const std::vector<uint64_t>& stack_pointers) {
  auto mapping = check_writable(target, spelled, address, length);
  if (!mapping) return mapping.error();
  WatchRange range;
  range.spelled = spelled;
  range.address = address;
  range.length = static_cast<uint32_t>(length);
  range.on_stack = on_a_stack(**mapping, stack_pointers);
  name_range(target, range);
  return range;
}

}  // namespace

Result<WatchPlan> plan_watch_ranges(const Target& target, const WatchRequest& request) {
  WatchPlan plan;
  plan.pid = target.process.pid();
  if (request.addresses.empty() && request.follows.empty()) {
    return make_error(ErrorCode::invalid_argument, "watch: nothing to watch",
                      "name an ADDR (g_total, 0x7f..:64) or a --follow 'SLOT->+OFF:LEN'");
  }
  const std::vector<uint64_t> stack_pointers = thread_stack_pointers(plan.pid);
  // A debugger's expression names its range (watch/debugger_expressions.h).
  auto label = [](const std::vector<std::string>& labels, size_t index, const std::string& text) {
    return index < labels.size() && !labels[index].empty() ? labels[index] : text;
  };
  for (size_t index = 0; index < request.addresses.size(); ++index) {
    const std::string& text = request.addresses[index];
    auto spec = parse_address_spec(text);
    if (!spec) return spec.error();
    auto placed = place(target, *spec, request.length);
    if (!placed) return placed.error();
    auto range = checked_range(target, label(request.address_labels, index, text), placed->address, placed->length,
                               stack_pointers);
    if (!range) return range.error();
    plan.ranges.push_back(std::move(*range));
  }
  for (size_t follow = 0; follow < request.follows.size(); ++follow) {
    const std::string text = label(request.follow_labels, follow, request.follows[follow]);
    auto spec = parse_follow_spec(request.follows[follow]);
    if (!spec) return spec.error();
    auto slot_place = place(target, spec->slot, 8);
    if (!slot_place) return slot_place.error();
    const std::string slot_text = text == request.follows[follow] ? spec->slot.spelled : text.substr(0, text.rfind("->"));
    auto slot = checked_range(target, slot_text, slot_place->address, 8, stack_pointers);
    if (!slot) return slot.error();
    slot->is_slot = true;
    slot->follow_spelled = text;
    // The slot may be watched already (an ADDR, another --follow).
    uint32_t slot_index = static_cast<uint32_t>(plan.ranges.size());
    for (uint32_t index = 0; index < plan.ranges.size(); ++index) {
      if (plan.ranges[index].address == slot->address && plan.ranges[index].length == 8) slot_index = index;
    }
    if (slot_index == plan.ranges.size()) {
      plan.ranges.push_back(*slot);
    } else {
      plan.ranges[slot_index].is_slot = true;
    }
    auto pointer_bytes = read_target_bytes(plan.pid, slot->address, 8);
    if (!pointer_bytes) return pointer_bytes.error();
    uint64_t pointer = 0;
    std::memcpy(&pointer, pointer_bytes->data(), 8);
    if (spec->length == 0 || spec->length > kMaxRangeBytes) {
      return make_error(ErrorCode::bad_length,
                        "--follow " + quoted_text(text) + ": a length of " + std::to_string(spec->length) +
                            " (1 to " + std::to_string(kMaxRangeBytes) + ")",
                        "write SLOT->+OFF:LEN with the bytes to watch at the pointer");
    }
    WatchRange dependent;
    if (pointer == 0) {
      dependent.spelled = text;
      dependent.length = static_cast<uint32_t>(spec->length);
      dependent.parked = true;
    } else {
      auto range = checked_range(target, text, pointer + static_cast<uint64_t>(spec->offset), spec->length,
                                 stack_pointers);
      if (!range) return range.error();
      dependent = std::move(*range);
    }
    dependent.follow_slot = slot_index;
    dependent.follow_offset = spec->offset;
    dependent.follow_spelled = text;
    plan.ranges.push_back(std::move(dependent));
  }
  if (plan.ranges.size() > XREF_WATCH_MAX_RANGES) {
    return make_error(ErrorCode::limit_exceeded,
                      "watch: " + std::to_string(plan.ranges.size()) + " ranges; at most " +
                          std::to_string(XREF_WATCH_MAX_RANGES) + " at once",
                      "watch fewer addresses, or one range over neighbours (ADDR:LEN)");
  }
  if (auto detail = plan_watch_detail(request, plan); !detail) return detail.error();
  return plan;
}

}  // namespace xref
