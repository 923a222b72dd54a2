// The filter as the BPF program runs it: a flat array of at most
// XREF_FILTER_MAX_INSNS compare-and-branch instructions (see bpf_abi.h), like
// classic BPF. '!' swaps an instruction's targets and '&&'/'||' become
// short-circuit jumps, so no stack is needed; every jump goes forward, so a
// program ends within XREF_FILTER_MAX_INSNS steps: a loop with a constant
// bound the verifier accepts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bpf_abi.h"
#include "filter_expr.h"
#include "result.h"

namespace xref {

inline constexpr size_t filter_max_instructions = XREF_FILTER_MAX_INSNS;

// Execution starts at instructions[0]. No instructions accepts every hit:
// that is both the program for "no filter" and for a filter that folds to
// true. A filter that folds to false is one unconditional jump to REJECT.
struct FilterProgram {
  std::vector<xref_filter_insn> instructions;
  // The quoted strings the STR_* instructions compare with (`constant` is
  // the index), each once, at most XREF_FILTER_MAX_STRINGS.
  std::vector<std::string> strings;
};

// Lowers a parsed filter. Comparisons of two constants are folded away; a
// constant on the left is moved to the right (mirroring the operator).
// More than filter_max_instructions comparisons left after folding is an
// invalid_argument error whose column is that of the first comparison past
// the limit.
Result<FilterProgram> lower_filter(const FilterNode& root);

// The fixed-size struct the helper writes into the BPF map.
xref_filter_program to_bpf_program(const FilterProgram& program);

// Runs the program exactly as the BPF program does: the same bounded loop,
// the same checks (a malformed program rejects). `values` are the fetched
// values by slot, extended to 64 bits; missing ones read as 0, like the
// BPF program's zero-filled array of XREF_FETCH_MAX_ITEMS values. The
// strings fetched are by string slot (fetch_string_slots), as the BPF
// program holds them; missing ones read as "".
bool evaluate_program(const xref_filter_program& program, std::span<const uint64_t> values,
                      std::span<const std::string> strings = {});
bool evaluate_program(const FilterProgram& program, std::span<const uint64_t> values,
                      std::span<const std::string> strings = {});

}  // namespace xref
