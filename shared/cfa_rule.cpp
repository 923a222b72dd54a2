// Runs the CFA part of the DWARF call-frame program: only the CFA rule and
// the remember/restore stack are tracked; rules for other registers are
// decoded (so their operands are skipped correctly) and ignored.
#include "cfa_rule.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "hex.h"

namespace xref {
namespace {

struct CfaState {
  uint64_t reg = 0;
  int64_t offset = 0;
  bool defined = false;     // some instruction has set a CFA rule
  bool expression = false;  // DW_CFA_def_cfa_expression: reg and offset mean nothing
};

Error damaged(const std::string& what) {
  return make_error(ErrorCode::elf_error, ".eh_frame: " + what,
                    "the image's unwind tables are damaged or use an unsupported layout");
}

// The FDE covering va. Like the runtime unwinder's binary search over
// .eh_frame_hdr, only the FDE with the greatest start <= va is considered.
const EhFrameFde* fde_covering(const EhFrame& frame, uint64_t va) {
  auto after = std::upper_bound(frame.fdes.begin(), frame.fdes.end(), va,
                                [](uint64_t value, const EhFrameFde& fde) { return value < fde.range.start; });
  if (after == frame.fdes.begin()) return nullptr;
  const EhFrameFde& candidate = *std::prev(after);
  return va - candidate.range.start < candidate.range.size ? &candidate : nullptr;
}

// Applies instructions until a row past `va` would start (or one fails).
class CfaInterpreter {
 public:
  CfaInterpreter(uint64_t va, uint64_t start) : va_(va), location_(start) {}

  // False once the rule at va is known or an error stopped the run.
  bool apply(const CallFrameInstruction& instruction) {
    using Kind = CallFrameInstruction::Kind;
    switch (instruction.kind) {
      case Kind::advance_location:
        location_ = instruction.location;
        if (location_ > va_) finished_ = true;
        return !finished_;
      case Kind::def_cfa:
        state_.reg = instruction.reg;
        state_.offset = instruction.value;
        state_.defined = true;
        state_.expression = false;
        break;
      case Kind::def_cfa_register:
        state_.reg = instruction.reg;
        state_.defined = true;
        state_.expression = false;
        break;
      case Kind::def_cfa_offset:
        // DWARF allows this only under a register rule; after an expression
        // the rule stays an expression, as readelf shows it.
        state_.offset = instruction.value;
        break;
      case Kind::def_cfa_expression:
        state_.defined = true;
        state_.expression = true;
        break;
      case Kind::remember_state: stack_.push_back(state_); break;
      case Kind::restore_state:
        if (stack_.empty()) {
          error_ = damaged("DW_CFA_restore_state without a remembered state at offset " +
                           to_hex(instruction.offset));
          finished_ = true;
          return false;
        }
        state_ = stack_.back();
        stack_.pop_back();
        break;
      case Kind::register_rule:
      case Kind::other: break;
    }
    return true;
  }

  bool finished() const { return finished_; }
  uint64_t location() const { return location_; }
  const std::optional<Error>& error() const { return error_; }
  const CfaState& state() const { return state_; }

 private:
  uint64_t va_;
  uint64_t location_;  // where the current row starts
  CfaState state_;
  std::vector<CfaState> stack_;  // the row stack of remember_state / restore_state; the CFA is part of a row
  std::optional<Error> error_;
  bool finished_ = false;
};

}  // namespace

std::string to_string(const CfaRule& rule) {
  static constexpr const char* kNames[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                           "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
  std::string text = rule.dwarf_register < std::size(kNames) ? kNames[rule.dwarf_register]
                                                               : "reg" + std::to_string(rule.dwarf_register);
  if (rule.offset >= 0) text += '+';
  return text + std::to_string(rule.offset);
}

namespace {

Result<CfaRule> run_cfa_program(std::span<const uint8_t> section, const EhFrame& frame, const EhFrameCie& cie,
                                const EhFrameFde* fde, uint64_t static_va) {
  // The CIE's initial instructions run first, as if they opened the FDE's
  // own program, so one location and one state carry across both.
  CfaInterpreter interpreter(static_va, fde->range.start);
  const auto visit = [&](const CallFrameInstruction& instruction) { return interpreter.apply(instruction); };
  auto ran = decode_call_frame_instructions(section, frame, cie, cie.instructions_begin, cie.instructions_end,
                                            fde->range.start, visit);
  if (ran && !interpreter.finished()) {
    ran = decode_call_frame_instructions(section, frame, cie, fde->instructions_begin, fde->instructions_end,
                                         interpreter.location(), visit);
  }
  if (interpreter.error()) return *interpreter.error();
  if (!ran) return ran.error();

  const CfaState& state = interpreter.state();
  const std::string where = "at static VA " + to_hex(static_va) + " (FDE at offset " + to_hex(fde->offset) + ")";
  if (!state.defined) return damaged("no CFA rule " + where);
  if (state.expression) {
    return make_error(ErrorCode::unsupported,
                      "the CFA " + where + " is a DWARF expression (DW_CFA_def_cfa_expression), not register+offset",
                      "xref does not evaluate CFA expressions; PLT stubs and signal trampolines use them");
  }
  if (state.reg > std::numeric_limits<uint16_t>::max()) {
    return damaged("CFA register " + std::to_string(state.reg) + " out of range " + where);
  }
  CfaRule rule;
  rule.dwarf_register = static_cast<uint16_t>(state.reg);
  rule.reg = rule.dwarf_register == kDwarfRsp   ? CfaRule::Register::rsp
             : rule.dwarf_register == kDwarfRbp ? CfaRule::Register::rbp
                                                : CfaRule::Register::other;
  rule.offset = state.offset;
  return rule;
}

}  // namespace

Result<CfaRule> cfa_rule_at(std::span<const uint8_t> section, const EhFrame& frame, uint64_t static_va) {
  const EhFrameFde* fde = fde_covering(frame, static_va);
  if (fde == nullptr) {
    return make_error(ErrorCode::address_unmapped, "no .eh_frame FDE covers static VA " + to_hex(static_va),
                      "the address is outside every function with unwind information");
  }
  if (fde->cie_index >= frame.cies.size()) return damaged("FDE at " + to_hex(fde->offset) + " has no CIE");
  return run_cfa_program(section, frame, frame.cies[fde->cie_index], fde, static_va);
}

Result<CfaRule> cfa_rule_at(const ElfImage& image, uint64_t static_va) {
  const SectionInfo* section = image.section(".eh_frame");
  if (section == nullptr) {
    return make_error(ErrorCode::elf_error, image.path() + " has no .eh_frame section",
                      "the image carries no unwind information");
  }
  auto record = image.fde_record(static_va);
  if (!record) {
    Error error = record.error();
    if (!error.message.starts_with(image.path())) {
      error.message = image.path() + ": " + error.message;
    }
    return error;
  }
  EhFrame frame;  // only its section VA: the record carries the CIE
  frame.section_va = section->addr;
  auto rule = run_cfa_program(image.section_bytes(*section), frame, record->cie, &record->fde, static_va);
  if (!rule) {
    Error error = rule.error();
    error.message = image.path() + ": " + error.message;
    return error;
  }
  return rule;
}

}  // namespace xref
