// --start-filter expressions, parsed and lowered to the program the BPF
// program runs. The input is "SPEC\nFILTER": the fetch spec names the
// variables; without a line break, or when the spec does not parse, those
// of docs/trace.md's examples and of tests/unit/filter_expr_test.cpp are. The parsed tree, its text
// read back, and the lowered program must accept and reject the same
// values.
#include <array>
#include <vector>

#include "filter_expr.h"
#include "filter_program.h"
#include "fuzz_support.h"

using namespace xref;

namespace {

constexpr std::string_view kKnownSpec =
    "id=+0(%di):u64,asset=+16(%dx):u64,op=+40(%sp):s32,amount=%r8,a=%r9,b=%r10,c=%r11,flag=%ax:u8,s=%si:s32,"
    "u=%di:u32";

void collect_constants(const FilterNode& node, std::vector<uint64_t>& constants) {
  if (constants.size() >= 8) return;
  if (node.kind == FilterNode::Kind::comparison) {
    for (const FilterOperand* operand : {&node.comparison.lhs, &node.comparison.rhs}) {
      if (operand->is_constant) constants.push_back(operand->constant);
    }
  }
  for (const FilterNode& child : node.children) collect_constants(child, constants);
}

// Values around every constant the filter compares with, in every slot and
// mixed across slots, where comparisons change their outcome.
std::vector<std::vector<uint64_t>> probe_values(const FilterNode& tree, size_t slots) {
  std::vector<uint64_t> constants;
  collect_constants(tree, constants);
  std::vector<uint64_t> singles = {0, 1, ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 63) - 1};
  for (uint64_t constant : constants) {
    for (uint64_t value : {constant - 1, constant, constant + 1}) singles.push_back(value);
  }
  std::vector<std::vector<uint64_t>> value_sets;
  for (uint64_t value : singles) value_sets.emplace_back(slots, value);
  if (!constants.empty()) {
    std::vector<uint64_t> mixed(slots);
    for (size_t slot = 0; slot < slots; ++slot) mixed[slot] = constants[slot % constants.size()] + slot % 3 - 1;
    value_sets.push_back(std::move(mixed));
  }
  return value_sets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  auto [spec, filter] = fuzz::split_first_line(input);
  static const std::vector<FilterVariable> known_variables = filter_variables(*parse_fetch_spec(kKnownSpec));
  std::vector<FilterVariable> variables = known_variables;
  if (input.find('\n') == std::string_view::npos) {
    filter = input;
  } else if (auto fetches = parse_fetch_spec(spec)) {
    variables = filter_variables(*fetches);
  }

  auto tree = parse_filter(filter, variables);
  if (!tree) {
    fuzz::require_parse_error(tree.error(), filter);
    return 0;
  }
  const std::string text = to_string(*tree);
  auto reread = parse_filter(text, variables);
  if (reread) {
    fuzz::require(to_string(*reread) == text, "the text of a parsed filter reads back to other text", text);
  } else {
    // Its parentheses may nest deeper than the input did (filter_expr.h).
    fuzz::require(reread.error().message.starts_with("the expression nests"),
                  "the text of a parsed filter does not parse", text);
  }

  auto program = lower_filter(*tree);
  if (!program) {
    fuzz::require_one_line_error(program.error());
    fuzz::require(program.error().code == ErrorCode::invalid_argument, "a lowering error is not invalid_argument");
    return 0;
  }
  fuzz::require(program->instructions.size() <= filter_max_instructions, "a program longer than the limit");
  const xref_filter_program bpf_program = to_bpf_program(*program);
  for (const auto& values : probe_values(*tree, variables.size())) {
    const bool expected = evaluate_filter(*tree, values);
    fuzz::require(!reread || evaluate_filter(*reread, values) == expected, "the filter's text evaluates otherwise",
                  text);
    fuzz::require(evaluate_program(*program, values) == expected, "the lowered program evaluates otherwise", text);
    fuzz::require(evaluate_program(bpf_program, values) == expected, "the BPF form evaluates otherwise", text);
  }
  return 0;
}
