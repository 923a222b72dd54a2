#include "sites/typed_address.h"

#include <functional>

#include "disassembly.h"
#include "hex.h"
#include "number_parse.h"
#include "sites/code_site.h"
#include "sites/probe_site_check.h"

namespace xref {
namespace {

// How an address is written back to the user: in the form they typed it.
using Spelling = std::function<std::string(uint64_t static_va)>;

// "setCommand+0x3" ("setCommand" at its start), with "module:" when the
// module is not the executable.
std::string symbol_offset(const ProbeModules& modules, uint32_t index, const FunctionSymbol& function, uint64_t va) {
  std::string text = index == 0 ? "" : modules[index].module->name() + ":";
  text += function.demangled;
  if (va != function.start) text += "+" + to_hex(va - function.start);
  return text;
}

// `va` starts an instruction of `function`; else not_an_instruction naming
// the instruction it is inside and the starts on either side, spelt as the
// user spells addresses. Code that does not disassemble cleanly is left to
// the planner's own check, which refuses it.
Result<void> require_instruction_start(const ElfImage& image, const FunctionSymbol& function, uint64_t va,
                                       const std::string& what, const Spelling& spell) {
  auto code = disassemble(image, function);
  if (!code || !code->complete()) return {};
  auto start = check_instruction_start(*code, va);
  if (start) return {};
  Error error = start.error();
  error.message = what + ": " + error.message;
  if (const Instruction* containing = instruction_containing(*code, va)) {
    const Instruction* next = instruction_at(*code, containing->end());
    error.hint = "use the instruction start " + spell(containing->address);
    if (next != nullptr) error.hint += " or the next one, " + spell(next->address);
  }
  return error;
}

ModuleFunction in_module(const FunctionSymbol& function, uint32_t index) {
  ModuleFunction placed;
  static_cast<FunctionSymbol&>(placed) = function;
  placed.module_index = index;
  return placed;
}

// MODULE:0xVA, or 0xVA in the CLI: a static VA of the module (the
// executable without one); an instruction start is checked by the planner.
Result<TypedAddress> place_static(ProbeModules& modules, uint32_t index, uint64_t va, const std::string& what) {
  const ElfImage& image = modules.image(index);
  if (auto data = data_not_code(image, va, what)) return *data;
  const FunctionSymbol* function = image.function_containing(va);
  if (function == nullptr) {
    if (auto live = live_address_as_static(modules, va, what)) return *live;
    return make_error(ErrorCode::address_unmapped,
                      what + ": no function of " + modules[index].module->name() + " holds " + to_hex(va),
                      "give an address inside a function, as " + nm_command(image) + " and objdump -d show them");
  }
  return TypedAddress{in_module(*function, index), va, va == function->start, std::nullopt};
}

// 0xVA from a debugger: a live address, placed through the process's
// mappings; one that no mapping holds but that is a static VA of the
// executable is refused with its conversion.
Result<TypedAddress> place_live(ProbeModules& modules, uint64_t va, const std::string& what) {
  const Target& target = modules.target();
  const LiveAddress live = target.space.resolve_live(va);
  const bool in_file = !live.candidates.empty() && live.candidates.front().file_backed;
  if (!in_file) {
    const ElfImage& image = modules.image(0);
    if (const FunctionSymbol* function = image.function_containing(va)) {
      const std::string static_text = modules[0].module->name() + ":" + to_hex(va);
      return make_error(ErrorCode::address_unmapped,
                        what + ": " + to_hex(va) + " is no live address of this process (" +
                            address_kind_name(live.kind) + "); as a static VA of " + modules[0].module->name() +
                            " it is " + symbol_offset(modules, 0, *function, va),
                        "in a debugger a bare address is live: for the static VA write " + static_text + " or " +
                            symbol_offset(modules, 0, *function, va));
    }
  }
  auto site = place_code_address(target, va, what + ":");
  if (!site) return site.error();
  const uint32_t index = modules.index_of(site->module, site->image);
  const uint64_t slide = va - site->static_va;
  const std::string where = what + " (" + site->module->name() + ":" + to_hex(site->static_va) + ", " +
                            symbol_offset(modules, index, site->function, site->static_va) + ")";
  if (auto start = require_instruction_start(*site->image, site->function, site->static_va, where,
                                             [&](uint64_t static_va) { return to_hex(static_va + slide); });
      !start) {
    return start.error();
  }
  return TypedAddress{in_module(site->function, index), site->static_va, site->at_entry, va};
}

// NAME+OFF, MODULE:NAME+OFF: an instruction inside the function.
Result<TypedAddress> place_symbol_offset(ProbeModules& modules, const std::string& module_name, const std::string& name,
                                         uint64_t offset, const std::string& text, const std::string& what) {
  const std::string prefix = module_name.empty() ? "" : module_name + ":";
  auto function = resolve_function_name(modules, prefix + name, what);
  if (!function) return function.error();
  if (function->size != 0 && offset >= function->size) {
    return make_error(ErrorCode::invalid_argument,
                      what + " " + text + ": " + function->demangled + " is " + std::to_string(function->size) +
                          " bytes long, +" + to_hex(offset) + " is past its end",
                      "give an offset inside it, as gdb's `disassemble " + name + "` or objdump -d shows");
  }
  const uint64_t va = function->start + offset;
  if (auto start = require_instruction_start(modules.image(function->module_index), *function, va, what + " " + text,
                                             [&](uint64_t start_va) {
                                               return prefix + name + "+" + to_hex(start_va - function->start);
                                             });
      !start) {
    return start.error();
  }
  return TypedAddress{*function, va, offset == 0, std::nullopt};
}

}  // namespace

std::optional<std::pair<std::string, uint64_t>> split_symbol_offset(const std::string& text) {
  const size_t plus = text.rfind('+');
  if (plus == std::string::npos || plus == 0 || plus + 1 >= text.size()) return std::nullopt;
  const std::string number = text.substr(plus + 1);
  if (!names_static_va(number)) return std::nullopt;
  auto offset = parse_u64(number, "offset");
  if (!offset) return std::nullopt;
  return std::make_pair(text.substr(0, plus), *offset);
}

Result<TypedAddress> place_typed_address(ProbeModules& modules, const std::string& text, const std::string& what,
                                         bool live_bare) {
  const auto [module_name, rest] = split_module(text);
  const std::string context = what + " " + text;
  if (names_static_va(rest)) {
    auto va = parse_u64(rest, context + ": address");
    if (!va) return va.error();
    if (module_name.empty() && live_bare) return place_live(modules, *va, context);
    uint32_t index = 0;
    if (!module_name.empty()) {
      auto named = modules.index_of_named(module_name, context);
      if (!named) return named.error();
      index = *named;
    }
    return place_static(modules, index, *va, context);
  }
  if (auto split = split_symbol_offset(rest)) {
    return place_symbol_offset(modules, module_name, split->first, split->second, text, what);
  }
  auto function = resolve_function_name(modules, text, what);
  if (!function) return function.error();
  return TypedAddress{*function, function->start, true, std::nullopt};
}

bool names_instruction_address(const std::string& text, bool live_bare) {
  const auto [module_name, rest] = split_module(text);
  return split_symbol_offset(rest).has_value() || (live_bare && module_name.empty() && names_static_va(rest));
}

}  // namespace xref
