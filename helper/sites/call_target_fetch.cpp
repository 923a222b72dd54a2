#include "sites/call_target_fetch.h"

#include <regex>
#include <string>

#include "x86_registers.h"

namespace xref {

CallTargetFetch call_target_fetch(const BranchTarget& target, uint64_t site_va) {
  CallTargetFetch fetch;
  FetchItem item;
  item.name = "target";
  if (target.kind == OperandKind::register_) {
    auto reg = register_from_name(target.operand);
    if (!reg) return fetch;
    item.base = *reg;
    fetch.item = item;
    return fetch;
  }
  if (target.kind == OperandKind::rip_memory) {
    // At the probe, ip is the call instruction's address.
    item.base = Register::ip;
    item.deref_offsets = {static_cast<int32_t>(target.va - site_va)};
    fetch.item = item;
    return fetch;
  }
  // [base], [base +- disp], [base + index*scale +- disp], [index*scale +- disp]
  // (a table of pointers).
  static const std::regex memory(
      R"(qword ptr \[(?:(\w+)(?: \+ (\w+)\*([1248]))?|(\w+)\*([1248]))(?: ([+-]) (0x[0-9a-f]+|\d+))?\])");
  std::smatch match;
  if (!std::regex_match(target.operand, match, memory)) {
    fetch.understood = false;
    return fetch;
  }
  fetch.indexed = match[2].matched || match[4].matched;
  if (match[1].matched) {
    auto base = register_from_name(match[1].str());
    if (!base) return fetch;
    item.base = *base;
    if (match[2].matched) {
      auto index = register_from_name(match[2].str());
      if (!index) return fetch;
      item.index = *index;
      item.scale = static_cast<uint8_t>(std::stoi(match[3].str()));
    }
  } else {
    // index*scale alone: the index is also the base, so scale - 1 more of it.
    auto index = register_from_name(match[4].str());
    if (!index) return fetch;
    item.base = *index;
    const int scale = std::stoi(match[5].str());
    if (scale > 1) {
      item.index = *index;
      item.scale = static_cast<uint8_t>(scale - 1);
    }
  }
  int64_t offset = match[7].matched ? std::stoll(match[7].str(), nullptr, 0) : 0;
  if (match[6].str() == "-") offset = -offset;
  item.deref_offsets = {static_cast<int32_t>(offset)};
  fetch.item = item;
  return fetch;
}

}  // namespace xref
