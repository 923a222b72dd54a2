#include "sites/trap_writer.h"

#include <algorithm>
#include <optional>

#include "disassembly.h"
#include "x86_decoder.h"
#include "x86_store.h"

namespace xref {
namespace {

struct Decoders {
  CapstoneDecoder capstone;
  X86StoreDecoder stores;
};

const Decoders& decoders() {
  static const Decoders shared;
  return shared;
}

std::optional<StoreInstruction> store_at(const ElfImage& image, const Instruction& instruction) {
  const auto bytes = image.bytes_at(instruction.address, instruction.size);
  if (!bytes || bytes->size() < instruction.size) return std::nullopt;
  return decoders().stores.decode(*bytes, instruction.address);
}

bool writes_memory(const ElfImage& image, const Instruction& instruction) {
  const auto store = store_at(image, instruction);
  return store && store->writes_memory;
}

bool rep_string_store(const ElfImage& image, const Instruction& instruction) {
  const auto store = store_at(image, instruction);
  return store && store->writes_memory && store->rep && store->string_store;
}

// Whether a jump of the function may arrive at `pc`: a direct one whose
// target it is, or any indirect one (a switch's jump table, whose targets
// the sweep does not know).
bool branch_target(const ElfImage& image, const FunctionCode& code, uint64_t pc) {
  for (const Instruction& instruction : code.instructions) {
    if (instruction.kind != InstructionKind::jump && instruction.kind != InstructionKind::conditional_jump) continue;
    const auto bytes = image.bytes_at(instruction.address, instruction.size);
    if (!bytes) continue;
    const auto decoded = decoders().capstone.decode(*bytes, instruction.address);
    if (!decoded || decoded->target.indirect() || decoded->target.va == pc) return true;
  }
  return false;
}

TrapWriter with_instruction(TrapWriter writer, TrapWriterStatus status, const Instruction& instruction) {
  writer.status = status;
  writer.va = instruction.address;
  writer.size = instruction.size;
  writer.text = instruction.text;
  return writer;
}

// The writer within `function`, whose code ends at or after `pc`.
TrapWriter writer_in(const ElfImage& image, const FunctionSymbol& function, uint64_t pc) {
  TrapWriter writer;
  writer.function = function.name;
  writer.function_start = function.start;
  auto code = disassemble(image, function);
  if (!code) {
    writer.status = TrapWriterStatus::undecodable;
    writer.why = "its function could not be disassembled: " + code.error().message;
    return writer;
  }
  const auto before = std::find_if(code->instructions.begin(), code->instructions.end(),
                                   [&](const Instruction& instruction) { return instruction.end() == pc; });
  const Instruction* at = instruction_at(*code, pc);
  if (before == code->instructions.end()) {
    if (at != nullptr && rep_string_store(image, *at)) return with_instruction(writer, TrapWriterStatus::found, *at);
    writer.status = pc == function.start ? TrapWriterStatus::function_start : TrapWriterStatus::not_a_boundary;
    writer.why = pc == function.start
                     ? "the trap pc starts the function: a call wrote (its return address)"
                     : "no instruction of the function ends at the trap pc (the disassembly disagrees with the trap)";
    return writer;
  }
  if (writes_memory(image, *before)) return with_instruction(writer, TrapWriterStatus::found, *before);
  if (at != nullptr && rep_string_store(image, *at)) return with_instruction(writer, TrapWriterStatus::found, *at);
  if (branch_target(image, *code, pc)) {
    writer = with_instruction(writer, TrapWriterStatus::ambiguous, *before);
    writer.why = "the instruction before the trap pc writes no memory and the pc is a branch target";
    return writer;
  }
  writer = with_instruction(writer, TrapWriterStatus::not_a_store, *before);
  writer.why = "the instruction before the trap pc writes no memory";
  return writer;
}

}  // namespace

const char* trap_writer_status_name(TrapWriterStatus status) {
  switch (status) {
    case TrapWriterStatus::found: return "found";
    case TrapWriterStatus::function_start: return "function_start";
    case TrapWriterStatus::ambiguous: return "ambiguous";
    case TrapWriterStatus::not_a_store: return "not_a_store";
    case TrapWriterStatus::not_a_boundary: return "not_a_boundary";
    case TrapWriterStatus::no_function: return "no_function";
    case TrapWriterStatus::undecodable: return "undecodable";
  }
  return "no_function";
}

TrapWriter trap_writer(const ElfImage& image, uint64_t pc) {
  const FunctionSymbol* function = image.function_containing(pc);
  // The writer may be the last instruction of the function before: a store
  // followed by no instruction of its own function (a noreturn call's
  // fall-through never comes, but a tail of the function may end at the
  // next one's start).
  if (function == nullptr || function->start == pc) {
    const FunctionSymbol* previous = pc > 0 ? image.function_containing(pc - 1) : nullptr;
    if (previous != nullptr && previous != function) {
      TrapWriter writer = writer_in(image, *previous, pc);
      if (writer.status == TrapWriterStatus::found) return writer;
    }
  }
  if (function == nullptr) {
    TrapWriter writer;
    writer.status = TrapWriterStatus::no_function;
    writer.why = "no function of the image contains the trap pc";
    return writer;
  }
  return writer_in(image, *function, pc);
}

}  // namespace xref
