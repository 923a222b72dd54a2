#include "sites/function_sites.h"

#include <algorithm>

#include "callee_tree.h"

namespace xref {

uint64_t entry_probe_va(const FunctionCode& code) { return code.entry_nop_va ? *code.entry_nop_va : code.start; }

bool SplitParts::is_split_part(uint32_t module_index, const ElfImage& image, const FunctionCode& caller,
                               uint64_t target_va) {
  const auto key = std::make_tuple(module_index, caller.start, target_va);
  if (auto cached = known_.find(key); cached != known_.end()) return cached->second;
  const bool split = xref::is_split_part(image, caller, target_va);
  known_[key] = split;
  return split;
}

std::vector<FunctionCode> SplitParts::code_parts(uint32_t module_index, const ElfImage& image,
                                                 const FunctionCode& code) {
  std::vector<FunctionCode> parts{code};
  for (const ExitJump& exit : code.exits) {
    if (exit.target.indirect() || in_parts(parts, exit.target.va)) continue;
    if (exit.kind != ExitKind::cold_part && !is_split_part(module_index, image, code, exit.target.va)) continue;
    const FunctionSymbol* part = image.function_at(exit.target.va);
    if (part == nullptr) continue;
    auto part_code = disassemble(image, *part);
    if (part_code && part_code->complete()) parts.push_back(std::move(*part_code));
  }
  return parts;
}

bool in_parts(const std::vector<FunctionCode>& parts, uint64_t va) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](const FunctionCode& part) { return va >= part.start && va < part.end; });
}

std::vector<FunctionExit> function_exits(SplitParts& split, uint32_t module_index, const ElfImage& image,
                                         const std::vector<FunctionCode>& parts) {
  std::vector<FunctionExit> exits;
  for (size_t index = 0; index < parts.size(); ++index) {
    const FunctionCode& part = parts[index];
    for (uint64_t ret : part.rets) exits.push_back({FunctionExitKind::ret, ret, index, 0, ""});
    for (const ExitJump& exit : part.exits) {
      // Into the function's parts, or into a split-off part (judged from
      // the function's own code) that did not disassemble cleanly: the
      // function goes on there.
      if (exit.kind == ExitKind::cold_part || in_parts(parts, exit.target.va) ||
          split.is_split_part(module_index, image, parts.front(), exit.target.va)) {
        continue;
      }
      FunctionExit listed{FunctionExitKind::tail_jump, exit.va, index, exit.target.va, ""};
      if (exit.conditional) {
        listed.kind = FunctionExitKind::conditional_tail_jump;
      } else if (exit.kind == ExitKind::indirect) {
        if (exit.jump_table) continue;  // a switch: stays in the function
        listed.kind = FunctionExitKind::pointer_tail_jump;
        listed.target_va = 0;
        listed.operand = exit.target.operand;
      } else if (exit.kind == ExitKind::outside_jump) {
        listed.kind = FunctionExitKind::outside_jump;
      }
      exits.push_back(std::move(listed));
    }
  }
  return exits;
}

}  // namespace xref
