#include "watch/debugger_expressions.h"

#include <algorithm>
#include <cctype>

#include "hex.h"
#include "number_parse.h"
#include "parse_error_render.h"
#include "watch/address_spec.h"

namespace xref {
namespace {

// 0x... with an optional :LEN: a live address, not an expression.
bool literal_address(const std::string& text) {
  auto spec = parse_address_spec(text);
  return spec && spec->live_address.has_value();
}

// `EXPR@N`: the last '@' followed by a count only.
Result<std::pair<std::string, uint64_t>> split_count(const std::string& text) {
  const size_t at = text.rfind('@');
  if (at == std::string::npos) return std::pair<std::string, uint64_t>{text, 1};
  const std::string count_text = text.substr(at + 1);
  auto count = parse_u64(count_text, "count");
  if (!count || *count == 0 || at == 0) {
    return make_error(ErrorCode::invalid_argument,
                      "watch " + quoted_text(text) + ": '@' takes a count of elements after the expression",
                      "write EXPR@N, e.g. *buf@64 (64 elements from *buf)");
  }
  return std::pair<std::string, uint64_t>{text.substr(0, at), *count};
}

// SLOT of 'SLOT->+OFF:LEN': the text before the last "->" that an offset follows.
size_t follow_arrow(const std::string& text) {
  for (size_t at = text.rfind("->"); at != std::string::npos; at = at == 0 ? std::string::npos : text.rfind("->", at - 1)) {
    const size_t next = at + 2;
    if (next < text.size() && (text[next] == '+' || text[next] == '-' || std::isdigit(static_cast<unsigned char>(text[next])))) {
      return at;
    }
  }
  return std::string::npos;
}

}  // namespace

Result<std::vector<WatchExpression>> watch_expressions(const WatchRequest& request) {
  std::vector<WatchExpression> expressions;
  if (!request.debugger.present) return expressions;
  for (size_t source = 0; source < request.addresses.size(); ++source) {
    const std::string& text = request.addresses[source];
    if (literal_address(text)) continue;
    auto split = split_count(text);
    if (!split) return split.error();
    WatchExpression expression;
    expression.index = static_cast<uint32_t>(expressions.size());
    expression.expression = split->first;
    expression.spelled = text;
    expression.location = request.location;
    expression.count = split->second;
    expression.source = source;
    expressions.push_back(std::move(expression));
  }
  for (size_t source = 0; source < request.follows.size(); ++source) {
    const std::string& text = request.follows[source];
    const size_t arrow = follow_arrow(text);
    if (arrow == std::string::npos || arrow == 0) {
      return make_error(ErrorCode::invalid_argument, "--follow " + quoted_text(text) + ": no '->OFF:LEN' after the slot",
                        "write SLOT->+OFF:LEN, e.g. --follow 'order->items->+8:8'");
    }
    const std::string slot = text.substr(0, arrow);
    if (literal_address(slot)) continue;
    WatchExpression expression;
    expression.index = static_cast<uint32_t>(expressions.size());
    expression.expression = slot;
    expression.spelled = slot;
    expression.follow = true;
    expression.source = source;
    expression.follow_rest = text.substr(arrow);
    expressions.push_back(std::move(expression));
  }
  return expressions;
}

Result<void> apply_evaluations(WatchRequest& request, const std::vector<WatchExpression>& expressions,
                               const std::vector<EvaluatedExpression>& evaluated) {
  request.address_labels.resize(request.addresses.size());
  request.follow_labels.resize(request.follows.size());
  for (const WatchExpression& expression : expressions) {
    const auto answer = std::find_if(evaluated.begin(), evaluated.end(),
                                     [&](const EvaluatedExpression& one) { return one.index == expression.index; });
    const std::string what = (expression.follow ? "--follow slot " : "watch ") + quoted_text(expression.spelled);
    if (answer == evaluated.end()) {
      return make_error(ErrorCode::invalid_argument, what + ": the debugger gave no address for it",
                        "the front end must answer every prepare.evaluate entry (docs/protocol.md)");
    }
    if (answer->error) {
      // The debugger's sentence ends where the hint begins ("...context; give ..."), not in ".;".
      std::string said = *answer->error;
      if (!said.empty() && said.back() == '.') said.pop_back();
      return make_error(ErrorCode::invalid_argument, what + ": " + said,
                        expression.location ? "with -l the expression's value is the address: give a pointer or an "
                                              "integer (`print EXPR` shows what the debugger makes of it)"
                                            : "give an lvalue (a variable, a field, *pointer) the selected frame "
                                              "sees, or -l EXPR to watch the address its value holds");
    }
    if (expression.follow) {
      // A slot is a pointer: 8 bytes at its address (its value moves the range).
      request.follows[expression.source] = to_hex(answer->address) + expression.follow_rest;
      request.follow_labels[expression.source] = expression.spelled + expression.follow_rest;
      continue;
    }
    uint64_t length = request.size;
    if (length == 0) length = answer->size * expression.count;
    if (length == 0 && expression.location) length = 8 * expression.count;
    if (length == 0) {
      return make_error(ErrorCode::bad_length, what + ": its type" + (answer->type.empty() ? "" : " (" + answer->type + ")") +
                                                   " has no size",
                        "give the bytes to watch with -s N");
    }
    request.addresses[expression.source] = to_hex(answer->address) + ":" + std::to_string(length);
    request.address_labels[expression.source] = expression.spelled;
  }
  return {};
}

}  // namespace xref
