// objdump's view of a binary's code, the ground truth for the disassembly
// tests: every instruction line of `objdump -d --no-show-raw-insn`, by
// address, with its mnemonic (prefixes stripped), operands and, for branches,
// the target objdump computed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

struct ObjdumpInstruction {
  uint64_t address = 0;
  uint64_t next = 0;     // address of the following instruction line (0 for the last one)
  std::string mnemonic;  // "call", "jmp", "jle", "ret", ... without prefixes such as bnd/notrack/repz
  std::string operands;  // AT&T operands without the trailing "# ..." comment
  std::string comment;   // what follows "# ", e.g. "4020 <memory_fp>"

  bool is_call() const { return mnemonic == "call" || mnemonic == "callq"; }
  bool is_ret() const { return mnemonic == "ret" || mnemonic == "retq" || mnemonic == "retf" || mnemonic == "lret"; }
  bool is_jump() const { return mnemonic == "jmp" || mnemonic == "jmpq"; }
  bool is_conditional_jump() const {
    return (mnemonic.size() > 1 && mnemonic[0] == 'j' && !is_jump()) || mnemonic.rfind("loop", 0) == 0;
  }
  bool is_trap() const { return mnemonic == "ud2" || mnemonic == "hlt" || mnemonic == "int3"; }
  bool indirect() const { return !operands.empty() && operands[0] == '*'; }
  // Direct branches print "11f0 <chain_c>" or "12d0 <recurse+0x20>".
  uint64_t direct_target() const { return std::stoull(operands, nullptr, 16); }
  // The symbol objdump names a direct target by: "chain_c", "recurse+0x20", or "" when stripped.
  std::string target_symbol() const {
    const size_t open = operands.find('<');
    const size_t close = operands.rfind('>');
    if (open == std::string::npos || close == std::string::npos || close < open) return {};
    return operands.substr(open + 1, close - open - 1);
  }
  // For rip-relative operands objdump's comment holds the absolute VA.
  std::optional<uint64_t> comment_address() const {
    if (comment.empty()) return std::nullopt;
    return std::stoull(comment, nullptr, 16);
  }
};

// objdump's prefix words, printed before the mnemonic.
inline bool is_objdump_prefix(const std::string& word) {
  static const char* const prefixes[] = {"bnd", "notrack", "repz", "rep", "repnz", "repne", "repe", "data16",
                                         "addr32", "cs", "ds", "es", "ss", "fs", "gs", "lock", "xacquire",
                                         "xrelease"};
  for (const char* prefix : prefixes) {
    if (word == prefix) return true;
  }
  return word.rfind("rex", 0) == 0;
}

inline void trim_objdump_text(std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  const size_t last = text.find_last_not_of(" \t");
  text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

// One instruction line of `objdump -d` split in its parts:
// "    11f0:\tlock add    %rdi,0x2e41(%rip)        # 4038 <sink>".
struct ObjdumpLineParts {
  uint64_t address = 0;
  std::vector<std::string> prefixes;  // "lock", "rep", "notrack", ...
  std::string mnemonic;
  std::string operands;  // as printed, trimmed
  std::string comment;   // what follows "# "
};

inline std::optional<ObjdumpLineParts> split_objdump_line(const std::string& line) {
  const size_t colon = line.find(":\t");
  if (colon == std::string::npos || line.empty() || line[0] != ' ') return std::nullopt;
  ObjdumpLineParts parts;
  parts.address = std::stoull(line.substr(0, colon), nullptr, 16);
  std::string text = line.substr(colon + 2);
  if (const size_t hash = text.find("# "); hash != std::string::npos) {
    parts.comment = text.substr(hash + 2);
    text = text.substr(0, hash);
  }
  std::istringstream words(text);
  std::string word;
  while (words >> word && is_objdump_prefix(word)) parts.prefixes.push_back(word);
  parts.mnemonic = word;
  std::getline(words, parts.operands);
  trim_objdump_text(parts.operands);
  return parts;
}

class ObjdumpListing {
 public:
  explicit ObjdumpListing(const std::string& path) {
    ObjdumpInstruction* previous = nullptr;
    for (const auto& line : command_lines("objdump -d --no-show-raw-insn " + path)) {
      // Symbol headers: "0000000000001070 <cold_split.cold>:"
      if (!line.empty() && line[0] != ' ' && line.size() > 3 && line.substr(line.size() - 2) == ">:") {
        const size_t open = line.find(" <");
        if (open != std::string::npos) {
          symbols_[line.substr(open + 2, line.size() - open - 4)] = std::stoull(line.substr(0, open), nullptr, 16);
        }
        continue;
      }
      // Instruction lines: "    11f0:\tmov    %rdi,0x2e41(%rip)        # 4038 <sink>"
      auto parts = split_objdump_line(line);
      if (!parts) continue;
      ObjdumpInstruction instruction;
      instruction.address = parts->address;
      instruction.comment = std::move(parts->comment);
      instruction.mnemonic = std::move(parts->mnemonic);
      instruction.operands = std::move(parts->operands);
      if (previous != nullptr) previous->next = instruction.address;
      previous = &(instructions_[instruction.address] = instruction);
    }
  }

  // Instruction lines with address in [start, end).
  std::vector<ObjdumpInstruction> in_range(uint64_t start, uint64_t end) const {
    std::vector<ObjdumpInstruction> found;
    for (auto it = instructions_.lower_bound(start); it != instructions_.end() && it->first < end; ++it) {
      found.push_back(it->second);
    }
    return found;
  }

  // The address of a symbol header objdump printed ("puts@plt", "main").
  std::optional<uint64_t> symbol(const std::string& name) const {
    auto found = symbols_.find(name);
    if (found == symbols_.end()) return std::nullopt;
    return found->second;
  }

  size_t size() const { return instructions_.size(); }

 private:
  std::map<uint64_t, ObjdumpInstruction> instructions_;
  std::map<std::string, uint64_t> symbols_;
};

// nm's defined symbols with their sizes (0 when nm prints none) and types.
struct NmSymbol {
  std::string name;
  std::string type;  // "T", "t", "D", ...
  uint64_t start = 0;
  uint64_t size = 0;

  bool is_text() const { return type == "T" || type == "t"; }
};

inline std::vector<NmSymbol> nm_symbols(const std::string& path) {
  std::vector<NmSymbol> symbols;
  for (const auto& line : command_lines("nm -S --defined-only " + path)) {
    std::istringstream fields(line);
    std::vector<std::string> words;
    std::string word;
    while (fields >> word) words.push_back(word);
    // "addr size type name", or "addr type name" for symbols without a size.
    NmSymbol symbol;
    if (words.size() == 4) {
      symbol.size = std::stoull(words[1], nullptr, 16);
      symbol.type = words[2];
      symbol.name = words[3];
    } else if (words.size() == 3) {
      symbol.type = words[1];
      symbol.name = words[2];
    } else {
      continue;
    }
    symbol.start = std::stoull(words[0], nullptr, 16);
    symbols.push_back(symbol);
  }
  return symbols;
}

inline NmSymbol nm_symbol(const std::vector<NmSymbol>& symbols, const std::string& name) {
  for (const auto& symbol : symbols) {
    if (symbol.name == name) return symbol;
  }
  throw std::runtime_error("nm does not list " + name);
}

}  // namespace xref::test
