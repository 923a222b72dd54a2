#include "process/resolve.h"

#include "disassembly.h"
#include "hex.h"
#include "output/json_envelope.h"
#include "process/module_lines.h"

namespace xref {

std::string segment_flags_text(uint32_t flags) {
  std::string text = "---";
  if (flags & 4u) text[0] = 'r';
  if (flags & 2u) text[1] = 'w';
  if (flags & 1u) text[2] = 'x';
  return text;
}

namespace {

// Disassembles the owning function to say whether va starts an instruction,
// and if not, which instruction it falls inside.
void describe_instruction(const ElfImage& image, const FunctionSymbol& function, uint64_t va,
                          ResolvedCandidate& resolved) {
  if (function.source == SymbolSource::plt) return;
  auto code = disassemble(image, function);
  if (!code) {
    resolved.instruction_error = code.error().message;
    return;
  }
  const Instruction* instruction = instruction_containing(*code, va);
  if (instruction == nullptr) {
    resolved.instruction_error = "no decoded instruction covers " + to_hex(va) + " in " + function.demangled;
    return;
  }
  resolved.instruction = InstructionInfo{instruction->address == va, instruction->address, instruction->size,
                                         instruction->text};
}

}  // namespace

ResolvedAddress resolve_address(const AddressSpace& space, uint64_t live_va) {
  ResolvedAddress address;
  address.live = space.resolve_live(live_va);
  for (const StaticCandidate& candidate : address.live.candidates) {
    ResolvedCandidate resolved;
    resolved.candidate = candidate;
    auto image = space.image(*candidate.module);
    if (image) {
      if (const FunctionSymbol* function = (*image)->function_containing(candidate.static_va)) {
        resolved.function = *function;
        resolved.function_offset = candidate.static_va - function->start;
        describe_instruction(**image, *function, candidate.static_va, resolved);
      }
    }
    address.candidates.push_back(std::move(resolved));
  }
  return address;
}

void add_source_lines(ResolvedAddress& address, ModuleLines& lines) {
  for (ResolvedCandidate& resolved : address.candidates) {
    resolved.source = lines.at(*resolved.candidate.module, resolved.candidate.static_va);
  }
}

nlohmann::json resolved_json(const ResolvedAddress& address) {
  nlohmann::json json = {
      {"live_va", hex_value(address.live.live_va)},
      {"kind", address_kind_name(address.live.kind)},
      {"resolved", address.resolved()},
      {"mapping", nullptr},
      {"file_offset", address.live.file_offset ? nlohmann::json(hex_value(*address.live.file_offset))
                                               : nlohmann::json(nullptr)},
  };
  if (address.live.mapping) {
    const MapEntry& mapping = *address.live.mapping;
    json["mapping"] = {{"start", hex_value(mapping.start)}, {"end", hex_value(mapping.end)},
                       {"perms", mapping.perms},            {"offset", hex_value(mapping.offset)},
                       {"path", mapping.path},              {"deleted", mapping.deleted}};
  }
  nlohmann::json candidates = nlohmann::json::array();
  for (const ResolvedCandidate& resolved : address.candidates) {
    const StaticCandidate& candidate = resolved.candidate;
    nlohmann::json entry = {
        {"module", candidate.module->name()},
        {"module_path", candidate.module->path},
        {"static_va", hex_value(candidate.static_va)},
        {"slide", hex_value(address.live.live_va - candidate.static_va)},
        {"file_backed", candidate.file_backed},
        {"segment_flags", segment_flags_text(candidate.segment_flags)},
        {"permissions_agree", candidate.permissions_agree},
        {"function", nullptr},
        {"instruction", nullptr},
        {"source", nullptr},
    };
    if (resolved.function) {
      entry["function"] = {{"name", resolved.function->name},
                           {"demangled", resolved.function->demangled},
                           {"start", hex_value(resolved.function->start)},
                           {"size", resolved.function->size},
                           {"offset", hex_value(resolved.function_offset)},
                           {"source", symbol_source_name(resolved.function->source)}};
    }
    if (resolved.instruction) {
      entry["instruction"] = {{"is_start", resolved.instruction->is_start},
                              {"start", hex_value(resolved.instruction->start)},
                              {"size", resolved.instruction->size},
                              {"text", resolved.instruction->text}};
    } else if (!resolved.instruction_error.empty()) {
      entry["instruction_error"] = resolved.instruction_error;
    }
    if (resolved.source) {
      entry["source"] = {{"file", resolved.source->file}, {"line", resolved.source->line}, {"column", resolved.source->column}};
    }
    candidates.push_back(std::move(entry));
  }
  json["candidates"] = candidates;
  return json;
}

std::string describe_candidate(const ResolvedCandidate& resolved) {
  const StaticCandidate& candidate = resolved.candidate;
  std::string text = candidate.module->name() + " static " + to_hex(candidate.static_va);
  if (!candidate.file_backed) text += " (zero-filled, not file-backed)";
  if (resolved.function) {
    text += "  " + resolved.function->demangled;
    if (resolved.function_offset != 0) text += "+" + to_hex(resolved.function_offset);
    if (resolved.function->is_fde_range()) text += " [fde range]";
  }
  if (resolved.source) text += " at " + resolved.source->file + ":" + std::to_string(resolved.source->line);
  if (resolved.instruction) {
    if (resolved.instruction->is_start) {
      text += "  [instruction start: " + resolved.instruction->text + "]";
    } else {
      text += "  [MID-INSTRUCTION: inside the " + std::to_string(resolved.instruction->size) +
              "-byte instruction at " + to_hex(resolved.instruction->start) + " (" + resolved.instruction->text + ")]";
    }
  }
  return text;
}

}  // namespace xref
