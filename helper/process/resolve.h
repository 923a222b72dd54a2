// Live VA -> mapping, file offset, static VA candidates, function and
// instruction: what `xref resolve` answers, and what trace output uses to
// name addresses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "address_space.h"
#include "elf_image.h"
#include "source_lines.h"

namespace xref {

struct InstructionInfo {
  bool is_start = false;         // va is the first byte of an instruction
  uint64_t start = 0;            // the instruction holding va
  uint32_t size = 0;
  std::string text;              // "call 0x1170"
};

struct ResolvedCandidate {
  StaticCandidate candidate;
  std::optional<FunctionSymbol> function;
  uint64_t function_offset = 0;
  std::optional<InstructionInfo> instruction;  // for code addresses with a known function
  std::string instruction_error;               // why instruction is absent, if it is
  std::optional<SourceLine> source;            // DWARF's file:line, when the module has lines (add_source_lines)
};

struct ResolvedAddress {
  LiveAddress live;
  std::vector<ResolvedCandidate> candidates;

  bool resolved() const {
    return live.kind == AddressKind::file_backed || live.kind == AddressKind::zero_fill
               ? !candidates.empty()
               : false;
  }
};

ResolvedAddress resolve_address(const AddressSpace& space, uint64_t live_va);
class ModuleLines;
// Fills each candidate's source from its module's DWARF lines.
void add_source_lines(ResolvedAddress& address, ModuleLines& lines);
nlohmann::json resolved_json(const ResolvedAddress& address);
// "sample_service static 0x1174  leaf_add+0x4 at /src/calls.c:12  [instruction start: ...]"
// style one-liner for a candidate.
std::string describe_candidate(const ResolvedCandidate& candidate);
std::string segment_flags_text(uint32_t flags);

}  // namespace xref
