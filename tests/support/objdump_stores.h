// objdump's view of which instructions write memory, the ground truth for
// the store-site tests: every line of `objdump -d -M intel` with its
// mnemonic, prefixes, operands, and, for a memory operand, its size, segment,
// base, index, scale and displacement as objdump prints them. Whether a line
// is a store is decided here from the mnemonic and the operand order of
// Intel syntax (the destination first), independently of xref's decoders.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "objdump_listing.h"

namespace xref::test {

struct ObjdumpMemory {
  uint32_t width = 0;   // from "DWORD PTR"; 0 when objdump prints no size
  std::string segment;  // "fs", "gs", "es", "ds", or ""
  std::string base;     // "rdi", "rip", or ""
  std::string index;
  uint32_t scale = 0;
  int64_t disp = 0;
};

// A line of the Intel listing: its parts, the operands split at commas.
struct ObjdumpIntelLine : ObjdumpLineParts {
  std::vector<std::string> operand_list;  // "QWORD PTR [rdi]", "rax"

  std::optional<uint64_t> comment_address() const {
    if (comment.empty()) return std::nullopt;
    return std::stoull(comment, nullptr, 16);
  }
};

inline bool starts_with_word(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// "QWORD PTR [rbx+rax*8+0x10]", "BYTE PTR fs:0x28", "ds:0x601040" -> memory.
inline std::optional<ObjdumpMemory> objdump_memory(std::string operand) {
  static const std::map<std::string, uint32_t> sizes = {
      {"BYTE", 1},  {"WORD", 2},     {"DWORD", 4},    {"FWORD", 6},    {"QWORD", 8},
      {"TBYTE", 10}, {"XMMWORD", 16}, {"OWORD", 16}, {"YMMWORD", 32}, {"ZMMWORD", 64}};
  ObjdumpMemory memory;
  if (const size_t ptr = operand.find(" PTR "); ptr != std::string::npos) {
    auto found = sizes.find(operand.substr(0, ptr));
    if (found != sizes.end()) memory.width = found->second;
    operand = operand.substr(ptr + 5);
  }
  if (const size_t brace = operand.find('{'); brace != std::string::npos) operand = operand.substr(0, brace);
  if (operand.size() > 3 && operand[2] == ':') {
    memory.segment = operand.substr(0, 2);
    operand = operand.substr(3);
  }
  if (operand.empty()) return std::nullopt;
  if (operand[0] != '[') {
    // An absolute address: "fs:0x28", "ds:0x601040".
    if (memory.segment.empty() || !starts_with_word(operand, "0x")) return std::nullopt;
    memory.disp = static_cast<int64_t>(std::stoull(operand, nullptr, 16));
    return memory;
  }
  const std::string inner = operand.substr(1, operand.find(']') - 1);
  size_t at = 0;
  while (at < inner.size()) {
    const bool negative = inner[at] == '-';
    if (inner[at] == '+' || inner[at] == '-') ++at;
    size_t end = inner.find_first_of("+-", at);
    if (end == std::string::npos) end = inner.size();
    const std::string term = inner.substr(at, end - at);
    at = end;
    if (starts_with_word(term, "0x")) {
      const auto value = static_cast<int64_t>(std::stoull(term, nullptr, 16));
      memory.disp = negative ? -value : value;
    } else if (const size_t star = term.find('*'); star != std::string::npos) {
      memory.index = term.substr(0, star);
      memory.scale = static_cast<uint32_t>(std::stoul(term.substr(star + 1)));
    } else if (memory.base.empty()) {
      memory.base = term;
    } else {
      memory.index = term;  // "[rax+rdx]"
      memory.scale = 1;
    }
  }
  return memory;
}

// Whether objdump's line writes memory: push/call/enter (below rsp), string
// stores, maskmovdqu ([rdi]), xchg/xadd with a memory operand, and every
// instruction whose first (destination) operand is memory, except those
// that only read it.
inline bool objdump_is_store(const ObjdumpIntelLine& line) {
  const std::string& m = line.mnemonic;
  for (const char* always : {"push", "call", "enter", "stos", "maskmovdqu", "vmaskmovdqu"}) {
    if (starts_with_word(m, always)) return true;
  }
  if (m == "movs" || m == "movsb" || m == "movsw" || m == "movsq") return true;
  if (line.operand_list.empty()) return false;
  if (m == "xchg" || m == "xadd") {
    for (const auto& operand : line.operand_list) {
      if (objdump_memory(operand)) return true;
    }
    return false;
  }
  if (!objdump_memory(line.operand_list[0])) return false;
  static const char* const reads_only[] = {
      "test", "jmp", "ljmp", "nop", "prefetch", "clflush", "clwb", "cldemote", "ldmxcsr", "vldmxcsr", "fld",
      "fild", "fcom", "ficom", "fucom", "fadd", "fsub", "fmul", "fdiv", "fiadd", "fisub", "fimul", "fidiv",
      "frstor", "fxrstor", "xrstor", "fbld", "lgdt", "lidt", "lldt", "ltr", "verr", "verw", "invlpg", "ptwrite",
      "bndc", "bndldx", "scas", "cmps", "lods", "outs", "ud0", "ud1"};
  for (const char* reader : reads_only) {
    if (starts_with_word(m, reader)) return false;
  }
  if (starts_with_word(m, "cmp") && !starts_with_word(m, "cmpxchg")) return false;
  if (m == "bt" || m == "mul" || m == "div" || m == "imul" || m == "idiv") return false;
  return true;
}

// Every instruction line of `objdump -d -M intel --no-show-raw-insn PATH`, by address.
inline std::map<uint64_t, ObjdumpIntelLine> objdump_intel(const std::string& path) {
  std::map<uint64_t, ObjdumpIntelLine> lines;
  for (const auto& text_line : command_lines("objdump -d -M intel --no-show-raw-insn " + path)) {
    auto parts = split_objdump_line(text_line);
    if (!parts) continue;
    ObjdumpIntelLine line{std::move(*parts), {}};
    // Intel operands hold no comma of their own: "QWORD PTR [rbx+rax*8+0x10]".
    std::istringstream operands(line.operands);
    for (std::string operand; std::getline(operands, operand, ',');) {
      trim_objdump_text(operand);
      if (!operand.empty()) line.operand_list.push_back(operand);
    }
    lines[line.address] = std::move(line);
  }
  return lines;
}

}  // namespace xref::test
