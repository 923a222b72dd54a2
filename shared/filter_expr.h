// Filter expressions: which probe hits to keep, as a boolean expression over
// the values a fetch spec names.
//   or         := and ('||' and)*
//   and        := unary ('&&' unary)*
//   unary      := '!' unary | '(' or ')' | comparison
//   comparison := operand [('=='|'!='|'<'|'<='|'>'|'>=') operand]
//   operand    := NAME | ['-'] NUMBER | STRING  (decimal or 0x hex; "text")
// A bare operand means "!= 0". Values are 64-bit; a comparison is signed when
// a signed fetch (s8..s64) or a negative constant takes part, else unsigned.
// A :string fetch compares only with a quoted string, by '==' or '!=':
// `key == "set"` is the whole string, `key == "se*"` (a '*' at the very end)
// any string that starts with "se", as bpftrace's strncmp would; `\*`, `\"`,
// `\\`, `\n`, `\t` and `\xHH` stand for those bytes. A string cut at its
// bound equals no constant, but its prefix still matches.
// filter_program.h lowers the tree to the flat form the BPF program runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fetch_spec.h"
#include "result.h"

namespace xref {

// Parentheses and '!' may nest this deep; the parser recurses per level.
inline constexpr int filter_max_nesting = 64;

// A name a filter may use, with the signedness of its fetch. The position in
// the list is the slot: the index of the value in the fetched values.
struct FilterVariable {
  std::string name;
  bool is_signed = false;
  uint16_t string_bound = 0;  // a :string fetch: its bound; 0: a number
  uint8_t string_slot = 0;    // a :string fetch: its string slot
};

// One variable per fetch, in fetch order, so slots index the fetch list.
std::vector<FilterVariable> filter_variables(std::span<const FetchItem> fetches);

enum class CompareOp : uint8_t { equal, not_equal, less, less_equal, greater, greater_equal };

// "==", "!=", "<", "<=", ">", ">=".
std::string_view compare_op_symbol(CompareOp op);

// Compares two 64-bit values as int64_t when is_signed, else as uint64_t.
bool compare_values(uint64_t lhs, CompareOp op, uint64_t rhs, bool is_signed);

struct FilterOperand {
  bool is_constant = false;
  uint8_t slot = 0;       // variable: index into the variables and values
  std::string name;       // variable: its name, for rendering
  uint64_t constant = 0;  // constant: the value's 64-bit two's-complement bits
  bool negative = false;  // constant: written with '-', which makes a comparison signed
  // A string: a variable that is a :string fetch (string_slot says where
  // it is read), or a quoted constant (text; prefix: it ended in '*').
  bool is_string = false;
  uint8_t string_slot = 0;
  std::string text;
  bool prefix = false;

  bool operator==(const FilterOperand&) const = default;
};

struct FilterComparison {
  FilterOperand lhs;
  CompareOp op = CompareOp::not_equal;
  FilterOperand rhs;       // a bare operand is lhs != constant 0
  bool is_signed = false;  // decided at parse time by the rule above
  int column = 0;          // 1-based column of lhs in the filter text

  bool operator==(const FilterComparison&) const = default;
};

struct FilterNode {
  enum class Kind : uint8_t {
    comparison,
    logical_not,  // children: exactly one
    logical_and,  // children: two or more, evaluated left to right
    logical_or,   // children: two or more, evaluated left to right
  };
  Kind kind = Kind::comparison;
  FilterComparison comparison;  // used when kind == comparison
  std::vector<FilterNode> children;

  bool operator==(const FilterNode&) const = default;
};

// Parses `text`, resolving names against `variables`. Errors are
// invalid_argument with `column` the 1-based column of the offending token:
// unknown names, unexpected tokens, a missing ')', trailing input, an empty
// expression, a number beyond 64 bits. An absent filter is not an empty
// expression: callers skip parsing and use an empty FilterProgram.
Result<FilterNode> parse_filter(std::string_view text, std::span<const FilterVariable> variables);

// The reference semantics: evaluates the tree over values[slot], which are
// fetched values already extended to 64 bits (extend_fetched_value). Slots
// beyond `values` read as 0, like the BPF program's zero-filled value array.
// A string fetch's value is its length | XREF_STRING_CUT when cut, and its
// bytes are strings[slot] (the same slots as values; missing ones are "").
bool evaluate_filter(const FilterNode& node, std::span<const uint64_t> values,
                     std::span<const std::string> strings = {});

// Whether a fetched string (its bytes, and whether it was cut at its bound)
// meets `constant`: equal (not cut, the same bytes), or with `prefix`,
// starting with it.
bool string_matches(std::string_view fetched, bool cut, std::string_view constant, bool prefix);

// Filter text that parses back to an equivalent tree; comparisons are
// written out ("flag" becomes "flag != 0") and nested &&/|| get parentheses.
// Those parentheses, and the ones around a negated comparison, can nest the
// text deeper than the filter it came from: the text of a tree parsed from
// a filter near filter_max_nesting may be refused as nesting too deep.
std::string to_string(const FilterNode& node);

}  // namespace xref
