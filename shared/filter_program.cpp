#include "filter_program.h"

#include <algorithm>
#include <utility>
#include <variant>

namespace xref {
namespace {

// A jump target while lowering: an instruction index, or ACCEPT/REJECT.
// Kept wider than __u8 until the instruction count is known to fit.
using Target = int;
constexpr Target accept_target = XREF_FILTER_ACCEPT;
constexpr Target reject_target = XREF_FILTER_REJECT;

CompareOp mirrored(CompareOp op) {
  switch (op) {
    case CompareOp::less: return CompareOp::greater;
    case CompareOp::less_equal: return CompareOp::greater_equal;
    case CompareOp::greater: return CompareOp::less;
    case CompareOp::greater_equal: return CompareOp::less_equal;
    case CompareOp::equal:
    case CompareOp::not_equal: return op;
  }
  return op;
}

__u8 abi_op(CompareOp op) {
  switch (op) {
    case CompareOp::equal: return XREF_FILTER_OP_EQ;
    case CompareOp::not_equal: return XREF_FILTER_OP_NE;
    case CompareOp::less: return XREF_FILTER_OP_LT;
    case CompareOp::less_equal: return XREF_FILTER_OP_LE;
    case CompareOp::greater: return XREF_FILTER_OP_GT;
    case CompareOp::greater_equal: return XREF_FILTER_OP_GE;
  }
  return XREF_FILTER_OP_EQ;
}

// The tree with every constant-only comparison folded away: either a
// constant outcome, or a tree whose comparisons all read a fetched value and
// have that value on the left.
using Folded = std::variant<bool, FilterNode>;

Folded fold_chain(const FilterNode& node, bool is_and);

Folded fold(const FilterNode& node) {
  switch (node.kind) {
    case FilterNode::Kind::comparison: {
      FilterComparison comparison = node.comparison;
      if (comparison.lhs.is_constant && comparison.rhs.is_constant) {
        return compare_values(comparison.lhs.constant, comparison.op, comparison.rhs.constant,
                              comparison.is_signed);
      }
      if (comparison.lhs.is_constant) {
        std::swap(comparison.lhs, comparison.rhs);
        comparison.op = mirrored(comparison.op);
      }
      FilterNode folded;
      folded.comparison = std::move(comparison);
      return folded;
    }
    case FilterNode::Kind::logical_not: {
      Folded operand = fold(node.children.at(0));
      if (const bool* constant = std::get_if<bool>(&operand)) return !*constant;
      FilterNode negation;
      negation.kind = FilterNode::Kind::logical_not;
      negation.children.push_back(std::move(std::get<FilterNode>(operand)));
      return negation;
    }
    case FilterNode::Kind::logical_and: return fold_chain(node, true);
    case FilterNode::Kind::logical_or: return fold_chain(node, false);
  }
  return false;
}

// For '&&' a true operand changes nothing and a false one decides the
// whole chain; for '||' the other way round.
Folded fold_chain(const FilterNode& node, bool is_and) {
  const bool neutral = is_and;
  FilterNode chain;
  chain.kind = node.kind;
  for (const FilterNode& child : node.children) {
    Folded operand = fold(child);
    if (const bool* constant = std::get_if<bool>(&operand)) {
      if (*constant == neutral) continue;
      return !neutral;
    }
    chain.children.push_back(std::move(std::get<FilterNode>(operand)));
  }
  if (chain.children.empty()) return neutral;
  if (chain.children.size() == 1) return std::move(chain.children.front());
  return chain;
}

// One instruction per comparison, so a subtree's code length is known
// before it is emitted; that is what lets every jump target be computed
// as an index after the subtree's own code.
size_t instruction_count(const FilterNode& node) {
  if (node.kind == FilterNode::Kind::comparison) return 1;
  size_t count = 0;
  for (const FilterNode& child : node.children) count += instruction_count(child);
  return count;
}

struct PendingInstruction {
  const FilterComparison* comparison;
  Target on_true;
  Target on_false;
};

// Emits `node` at the end of `code` so that it continues at on_true or
// on_false, both of which lie after the node's code (or are ACCEPT/REJECT).
void emit(const FilterNode& node, Target on_true, Target on_false,
          std::vector<PendingInstruction>& code) {
  switch (node.kind) {
    case FilterNode::Kind::comparison:
      code.push_back({&node.comparison, on_true, on_false});
      return;
    case FilterNode::Kind::logical_not:
      emit(node.children.at(0), on_false, on_true, code);
      return;
    case FilterNode::Kind::logical_and:
    case FilterNode::Kind::logical_or: {
      // Every operand but the last decides the chain on one outcome ('&&':
      // false, '||': true) and otherwise falls through to the next operand,
      // whose code starts right after its own.
      const bool is_and = node.kind == FilterNode::Kind::logical_and;
      const size_t last = node.children.size() - 1;
      for (size_t i = 0; i < last; ++i) {
        const FilterNode& child = node.children[i];
        const auto next_operand = static_cast<Target>(code.size() + instruction_count(child));
        if (is_and) {
          emit(child, next_operand, on_false, code);
        } else {
          emit(child, on_true, next_operand, code);
        }
      }
      emit(node.children[last], on_true, on_false, code);
      return;
    }
  }
}

// The index of `text` in the program's strings, added when new.
Result<size_t> string_index(std::vector<std::string>& strings, const FilterComparison& comparison) {
  for (size_t i = 0; i < strings.size(); ++i) {
    if (strings[i] == comparison.rhs.text) return i;
  }
  if (strings.size() == XREF_FILTER_MAX_STRINGS) {
    Error error = make_error(ErrorCode::invalid_argument,
                             "filter compares with more than " + std::to_string(XREF_FILTER_MAX_STRINGS) +
                                 " different strings",
                             "compare with fewer strings, e.g. one prefix for several");
    error.column = comparison.column;
    return error;
  }
  strings.push_back(comparison.rhs.text);
  return strings.size() - 1;
}

// A string comparison: STR_EQ or STR_PREFIX; '!=' swaps the targets.
xref_filter_insn encode_string(const PendingInstruction& pending, size_t string) {
  const FilterComparison& comparison = *pending.comparison;
  xref_filter_insn insn{};
  insn.lhs_slot = comparison.lhs.slot;
  insn.rhs_slot = XREF_FILTER_CONSTANT_SLOT;
  insn.op = comparison.rhs.prefix ? XREF_FILTER_OP_STR_PREFIX : XREF_FILTER_OP_STR_EQ;
  insn.string_slot = comparison.lhs.string_slot;
  const bool equal = comparison.op == CompareOp::equal;
  insn.on_true = static_cast<__u8>(equal ? pending.on_true : pending.on_false);
  insn.on_false = static_cast<__u8>(equal ? pending.on_false : pending.on_true);
  insn.constant = string;
  return insn;
}

xref_filter_insn encode(const PendingInstruction& pending) {
  const FilterComparison& comparison = *pending.comparison;
  xref_filter_insn insn{};
  insn.lhs_slot = comparison.lhs.slot;
  insn.rhs_slot = comparison.rhs.is_constant ? XREF_FILTER_CONSTANT_SLOT : comparison.rhs.slot;
  insn.op = abi_op(comparison.op);
  insn.is_signed = comparison.is_signed ? 1 : 0;
  insn.on_true = static_cast<__u8>(pending.on_true);
  insn.on_false = static_cast<__u8>(pending.on_false);
  insn.constant = comparison.rhs.is_constant ? comparison.rhs.constant : 0;
  return insn;
}

// The BPF side's comparison, written against the ABI opcodes and kept apart
// from compare_values on purpose: the tests compare the two.
bool run_comparison(__u8 op, __u64 lhs, __u64 rhs, bool is_signed, bool& known_op) {
  const auto signed_lhs = static_cast<__s64>(lhs);
  const auto signed_rhs = static_cast<__s64>(rhs);
  known_op = true;
  switch (op) {
    case XREF_FILTER_OP_EQ: return lhs == rhs;
    case XREF_FILTER_OP_NE: return lhs != rhs;
    case XREF_FILTER_OP_LT: return is_signed ? signed_lhs < signed_rhs : lhs < rhs;
    case XREF_FILTER_OP_LE: return is_signed ? signed_lhs <= signed_rhs : lhs <= rhs;
    case XREF_FILTER_OP_GT: return is_signed ? signed_lhs > signed_rhs : lhs > rhs;
    case XREF_FILTER_OP_GE: return is_signed ? signed_lhs >= signed_rhs : lhs >= rhs;
    default: known_op = false; return false;
  }
}

}  // namespace

Result<FilterProgram> lower_filter(const FilterNode& root) {
  FilterProgram program;
  Folded folded = fold(root);
  if (const bool* constant = std::get_if<bool>(&folded)) {
    if (!*constant) {
      // Both targets REJECT: the comparison's outcome does not matter.
      xref_filter_insn reject_all{};
      reject_all.rhs_slot = XREF_FILTER_CONSTANT_SLOT;
      reject_all.op = XREF_FILTER_OP_EQ;
      reject_all.on_true = XREF_FILTER_REJECT;
      reject_all.on_false = XREF_FILTER_REJECT;
      program.instructions.push_back(reject_all);
    }
    return program;
  }

  const FilterNode& tree = std::get<FilterNode>(folded);
  std::vector<PendingInstruction> code;
  emit(tree, accept_target, reject_target, code);
  if (code.size() > filter_max_instructions) {
    Error error =
        make_error(ErrorCode::invalid_argument,
                   "filter needs " + std::to_string(code.size()) + " instructions; the limit is " +
                       std::to_string(filter_max_instructions),
                   "use fewer comparisons, e.g. split the probe or narrow the fetches");
    error.column = code[filter_max_instructions].comparison->column;
    return error;
  }
  for (const PendingInstruction& pending : code) {
    // Slots past the BPF value array would make the program reject always.
    if (pending.comparison->lhs.slot >= XREF_FETCH_MAX_ITEMS ||
        (!pending.comparison->rhs.is_constant &&
         pending.comparison->rhs.slot >= XREF_FETCH_MAX_ITEMS)) {
      Error error = make_error(ErrorCode::invalid_argument,
                               "filter reads a value past the first " +
                                   std::to_string(XREF_FETCH_MAX_ITEMS) + " fetches");
      error.column = pending.comparison->column;
      return error;
    }
    if (pending.comparison->rhs.is_string) {
      auto string = string_index(program.strings, *pending.comparison);
      if (!string) return string.error();
      program.instructions.push_back(encode_string(pending, *string));
      continue;
    }
    program.instructions.push_back(encode(pending));
  }
  return program;
}

xref_filter_program to_bpf_program(const FilterProgram& program) {
  xref_filter_program packed{};
  const size_t count = std::min(program.instructions.size(), filter_max_instructions);
  packed.insn_count = static_cast<__u32>(count);
  std::copy_n(program.instructions.begin(), count, packed.insns);
  for (size_t i = 0; i < program.strings.size() && i < XREF_FILTER_MAX_STRINGS; ++i) {
    const size_t length = std::min(program.strings[i].size(), size_t{XREF_STRING_MAX_BYTES});
    packed.string_lengths[i] = static_cast<__u32>(length);
    std::copy_n(program.strings[i].begin(), length, packed.strings[i]);
  }
  return packed;
}

namespace {

// The BPF side's string comparison, on the packed program's bytes: the
// fetched string (by string slot) against the program's string `index`.
bool run_string_comparison(const xref_filter_program& program, const xref_filter_insn& insn, __u64 value,
                           std::span<const std::string> strings, bool& known) {
  known = insn.constant < XREF_FILTER_MAX_STRINGS && insn.string_slot < XREF_FETCH_MAX_STRINGS &&
          program.string_lengths[insn.constant] <= XREF_STRING_MAX_BYTES;
  if (!known) return false;
  const std::string_view constant(reinterpret_cast<const char*>(program.strings[insn.constant]),
                                  program.string_lengths[insn.constant]);
  const std::string_view fetched = insn.string_slot < strings.size() ? std::string_view(strings[insn.string_slot]) : "";
  return string_matches(fetched.substr(0, value & XREF_STRING_LENGTH_MASK), (value & XREF_STRING_CUT) != 0, constant,
                        insn.op == XREF_FILTER_OP_STR_PREFIX);
}

}  // namespace

bool evaluate_program(const xref_filter_program& program, std::span<const uint64_t> values,
                      std::span<const std::string> strings) {
  __u64 slots[XREF_FETCH_MAX_ITEMS] = {};
  std::copy_n(values.begin(), std::min(values.size(), size_t{XREF_FETCH_MAX_ITEMS}), slots);

  if (program.insn_count == 0) return true;
  if (program.insn_count > XREF_FILTER_MAX_INSNS) return false;
  __u32 pc = 0;
  for (__u32 step = 0; step < XREF_FILTER_MAX_INSNS; ++step) {
    if (pc >= program.insn_count) return false;
    const xref_filter_insn& insn = program.insns[pc];
    if (insn.lhs_slot >= XREF_FETCH_MAX_ITEMS) return false;
    __u64 rhs = insn.constant;
    if (insn.rhs_slot != XREF_FILTER_CONSTANT_SLOT) {
      if (insn.rhs_slot >= XREF_FETCH_MAX_ITEMS) return false;
      rhs = slots[insn.rhs_slot];
    }
    bool known_op = false;
    const bool is_string = insn.op == XREF_FILTER_OP_STR_EQ || insn.op == XREF_FILTER_OP_STR_PREFIX;
    const bool outcome = is_string ? run_string_comparison(program, insn, slots[insn.lhs_slot], strings, known_op)
                                   : run_comparison(insn.op, slots[insn.lhs_slot], rhs, insn.is_signed != 0, known_op);
    if (!known_op) return false;
    const __u8 next = outcome ? insn.on_true : insn.on_false;
    if (next == XREF_FILTER_ACCEPT) return true;
    if (next == XREF_FILTER_REJECT) return false;
    if (next <= pc) return false;  // backward: the bound would cut it short anyway
    pc = next;
  }
  return false;
}

bool evaluate_program(const FilterProgram& program, std::span<const uint64_t> values,
                      std::span<const std::string> strings) {
  if (program.instructions.size() > filter_max_instructions) return false;
  return evaluate_program(to_bpf_program(program), values, strings);
}

}  // namespace xref
