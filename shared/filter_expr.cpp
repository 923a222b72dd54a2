#include "filter_expr.h"

#include "number_parse.h"
#include "parse_error_render.h"

namespace xref {
namespace {

constexpr std::string_view expression_hint =
    "write comparisons such as 'amount > 0', joined with '&&', '||', '!' and parentheses";

enum class TokenKind : uint8_t {
  name,
  number,
  compare,  // ==, !=, <, <=, >, >=
  logical_and,
  logical_or,
  bang,
  open_paren,
  close_paren,
  end,
  invalid,  // a lexing error, reported when the parser reaches it
};

struct Token {
  TokenKind kind = TokenKind::end;
  std::string_view text;
  int column = 0;
  CompareOp op = CompareOp::equal;  // compare
  uint64_t value = 0;               // number
  bool negative = false;            // number
  Error error;                      // invalid
};

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

Error error_at(int column, std::string message, std::string_view hint = expression_hint) {
  Error error = make_error(ErrorCode::invalid_argument, std::move(message), std::string(hint));
  error.column = column;
  return error;
}

// Splits the text up front. A lexing error becomes an `invalid` token and
// ends the list, so the parser reports it only if nothing to its left is
// wrong: the leftmost mistake is the one shown.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  size_t position = 0;
  auto push = [&](TokenKind kind, size_t length) {
    Token token;
    token.kind = kind;
    token.text = text.substr(position, length);
    token.column = static_cast<int>(position) + 1;
    position += length;
    tokens.push_back(token);
    return &tokens.back();
  };
  auto push_invalid = [&](Error error) {
    Token token;
    token.kind = TokenKind::invalid;
    token.column = error.column;
    token.error = std::move(error);
    tokens.push_back(std::move(token));
  };

  while (true) {
    while (position < text.size() && is_space(text[position])) ++position;
    if (position >= text.size()) break;
    const char c = text[position];
    const char next = position + 1 < text.size() ? text[position + 1] : '\0';
    const int column = static_cast<int>(position) + 1;

    if (is_identifier_start(c)) {
      size_t end = position;
      while (end < text.size() && is_identifier_char(text[end])) ++end;
      push(TokenKind::name, end - position);
    } else if (is_digit(c) || (c == '-' && is_digit(next))) {
      // Scan letters too, so "0x1g" or "12ab" is one bad number with the
      // column of its bad character, not a number followed by a name.
      size_t end = position + (c == '-' ? 1 : 0);
      while (end < text.size() && is_identifier_char(text[end])) ++end;
      const std::string_view literal = text.substr(position, end - position);
      Token* token = nullptr;
      if (c == '-') {
        auto value = parse_i64(literal, "number", column);
        if (!value) {
          push_invalid(value.error());
          break;
        }
        token = push(TokenKind::number, literal.size());
        token->value = static_cast<uint64_t>(*value);
        token->negative = *value < 0;
      } else {
        auto value = parse_u64(literal, "number", column);
        if (!value) {
          push_invalid(value.error());
          break;
        }
        token = push(TokenKind::number, literal.size());
        token->value = *value;
      }
    } else if (c == '-') {
      push_invalid(error_at(column, "expected a digit right after '-'",
                            "write negative numbers as -5; there is no subtraction"));
      break;
    } else if (c == '=' && next == '=') {
      push(TokenKind::compare, 2)->op = CompareOp::equal;
    } else if (c == '!' && next == '=') {
      push(TokenKind::compare, 2)->op = CompareOp::not_equal;
    } else if (c == '<' && next == '=') {
      push(TokenKind::compare, 2)->op = CompareOp::less_equal;
    } else if (c == '>' && next == '=') {
      push(TokenKind::compare, 2)->op = CompareOp::greater_equal;
    } else if (c == '<') {
      push(TokenKind::compare, 1)->op = CompareOp::less;
    } else if (c == '>') {
      push(TokenKind::compare, 1)->op = CompareOp::greater;
    } else if (c == '&' && next == '&') {
      push(TokenKind::logical_and, 2);
    } else if (c == '|' && next == '|') {
      push(TokenKind::logical_or, 2);
    } else if (c == '!') {
      push(TokenKind::bang, 1);
    } else if (c == '(') {
      push(TokenKind::open_paren, 1);
    } else if (c == ')') {
      push(TokenKind::close_paren, 1);
    } else if (c == '=') {
      push_invalid(error_at(column, "unexpected '='; compare with '=='"));
      break;
    } else if (c == '&') {
      push_invalid(error_at(column, "unexpected '&'; write '&&' for \"and\""));
      break;
    } else if (c == '|') {
      push_invalid(error_at(column, "unexpected '|'; write '||' for \"or\""));
      break;
    } else {
      push_invalid(error_at(column, "unexpected character " + quoted_character(c)));
      break;
    }
  }
  if (tokens.empty() || tokens.back().kind != TokenKind::invalid) {
    Token end;
    end.kind = TokenKind::end;
    end.column = static_cast<int>(text.size()) + 1;
    tokens.push_back(end);
  }
  return tokens;
}

std::string describe(const Token& token) {
  if (token.kind == TokenKind::end) return "the end of the expression";
  return "'" + std::string(token.text) + "'";
}

class FilterParser {
 public:
  FilterParser(std::string_view text, std::span<const FilterVariable> variables)
      : tokens_(tokenize(text)), variables_(variables) {}

  Result<FilterNode> parse() {
    if (current().kind == TokenKind::end) {
      return error_at(
          1, "empty filter expression",
          "write a comparison such as 'amount > 0', or give no filter to keep every hit");
    }
    auto root = parse_or();
    if (!root) return root;
    const Token& trailing = current();
    if (trailing.kind == TokenKind::end) return root;
    if (trailing.kind == TokenKind::invalid) return trailing.error;
    if (trailing.kind == TokenKind::close_paren) {
      return error_at(trailing.column, "unbalanced parenthesis: ')' without a matching '('");
    }
    if (trailing.kind == TokenKind::compare) {
      return error_at(trailing.column, "comparisons do not chain: unexpected " + describe(trailing),
                      "join comparisons with '&&', e.g. 'a < b && b < c'");
    }
    return error_at(trailing.column, "expected '&&', '||' or the end of the expression but found " +
                                         describe(trailing));
  }

 private:
  using ParseFn = Result<FilterNode> (FilterParser::*)();

  // and/or chains become one node with all operands as children, so a long
  // chain stays shallow for every recursive pass over the tree.
  Result<FilterNode> parse_chain(TokenKind separator, FilterNode::Kind kind,
                                 ParseFn parse_element) {
    auto first = (this->*parse_element)();
    if (!first) return first;
    if (current().kind != separator) return first;
    FilterNode chain;
    chain.kind = kind;
    chain.children.push_back(std::move(*first));
    while (current().kind == separator) {
      advance();
      auto operand = (this->*parse_element)();
      if (!operand) return operand;
      chain.children.push_back(std::move(*operand));
    }
    return chain;
  }

  Result<FilterNode> parse_or() {
    return parse_chain(TokenKind::logical_or, FilterNode::Kind::logical_or,
                       &FilterParser::parse_and);
  }

  Result<FilterNode> parse_and() {
    return parse_chain(TokenKind::logical_and, FilterNode::Kind::logical_and,
                       &FilterParser::parse_unary);
  }

  Result<FilterNode> parse_unary() {
    const Token& token = current();
    if (token.kind != TokenKind::bang && token.kind != TokenKind::open_paren) {
      return parse_comparison();
    }
    if (nesting_ == filter_max_nesting) {
      return error_at(token.column,
                      "the expression nests '(' and '!' deeper than " +
                          std::to_string(filter_max_nesting) + " levels",
                      "simplify the expression");
    }
    ++nesting_;
    auto node = token.kind == TokenKind::bang ? parse_negation() : parse_parenthesized();
    --nesting_;
    return node;
  }

  Result<FilterNode> parse_negation() {
    advance();  // '!'
    auto operand = parse_unary();
    if (!operand) return operand;
    FilterNode negation;
    negation.kind = FilterNode::Kind::logical_not;
    negation.children.push_back(std::move(*operand));
    return negation;
  }

  Result<FilterNode> parse_parenthesized() {
    const int open_column = current().column;
    advance();  // '('
    auto inner = parse_or();
    if (!inner) return inner;
    const Token& token = current();
    if (token.kind == TokenKind::invalid) return token.error;
    if (token.kind != TokenKind::close_paren) {
      return error_at(token.column,
                      "unbalanced parenthesis: expected ')' to close the '(' at column " +
                          std::to_string(open_column) + " but found " + describe(token),
                      "add the missing ')'");
    }
    advance();
    return inner;
  }

  Result<FilterNode> parse_comparison() {
    FilterNode node;
    FilterComparison& comparison = node.comparison;
    comparison.column = current().column;
    auto lhs = parse_operand();
    if (!lhs) return lhs.error();
    comparison.lhs = std::move(*lhs);
    if (current().kind == TokenKind::compare) {
      comparison.op = current().op;
      advance();
      auto rhs = parse_operand();
      if (!rhs) return rhs.error();
      comparison.rhs = std::move(*rhs);
    } else {
      comparison.op = CompareOp::not_equal;
      comparison.rhs.is_constant = true;  // constant 0
    }
    comparison.is_signed = makes_signed(comparison.lhs) || makes_signed(comparison.rhs);
    return node;
  }

  bool makes_signed(const FilterOperand& operand) const {
    return operand.is_constant ? operand.negative : variables_[operand.slot].is_signed;
  }

  Result<FilterOperand> parse_operand() {
    const Token& token = current();
    FilterOperand operand;
    switch (token.kind) {
      case TokenKind::number:
        operand.is_constant = true;
        operand.constant = token.value;
        operand.negative = token.negative;
        advance();
        return operand;
      case TokenKind::name: {
        auto slot = resolve(token);
        if (!slot) return slot.error();
        operand.slot = *slot;
        operand.name = std::string(token.text);
        advance();
        return operand;
      }
      case TokenKind::invalid: return token.error;
      default:
        return error_at(token.column,
                        "expected a name, a number, '!' or '(' but found " + describe(token));
    }
  }

  Result<uint8_t> resolve(const Token& token) const {
    for (size_t slot = 0; slot < variables_.size(); ++slot) {
      if (variables_[slot].name != token.text) continue;
      // A fetch spec has at most fetch_max_items entries; a longer
      // hand-made list must not wrap the 8-bit slot.
      if (slot >= fetch_max_items) {
        return error_at(
            token.column,
            "name '" + std::string(token.text) + "' is variable number " +
                std::to_string(slot + 1) + "; filters can use only the first " +
                std::to_string(fetch_max_items),
            "filter on one of the first " + std::to_string(fetch_max_items) + " fetches");
      }
      return static_cast<uint8_t>(slot);
    }
    std::string message = "unknown name '" + std::string(token.text) + "'; ";
    if (variables_.empty()) {
      message += "there are no fetches";
    } else {
      message += "the fetches are: ";
      for (size_t slot = 0; slot < variables_.size(); ++slot) {
        if (slot > 0) message += ", ";
        message += variables_[slot].name;
      }
    }
    return error_at(token.column, std::move(message), "filter on names the fetch spec defines");
  }

  const Token& current() const { return tokens_[index_]; }
  void advance() {
    if (index_ + 1 < tokens_.size()) ++index_;
  }

  std::vector<Token> tokens_;
  std::span<const FilterVariable> variables_;
  size_t index_ = 0;
  int nesting_ = 0;
};

uint64_t operand_value(const FilterOperand& operand, std::span<const uint64_t> values) {
  if (operand.is_constant) return operand.constant;
  return operand.slot < values.size() ? values[operand.slot] : 0;
}

std::string operand_text(const FilterOperand& operand) {
  if (!operand.is_constant) return operand.name;
  if (operand.negative) return "-" + std::to_string(0 - operand.constant);
  return std::to_string(operand.constant);
}

}  // namespace

std::vector<FilterVariable> filter_variables(std::span<const FetchItem> fetches) {
  std::vector<FilterVariable> variables;
  for (const FetchItem& fetch : fetches) variables.push_back({fetch.name, fetch.type.is_signed});
  return variables;
}

std::string_view compare_op_symbol(CompareOp op) {
  switch (op) {
    case CompareOp::equal: return "==";
    case CompareOp::not_equal: return "!=";
    case CompareOp::less: return "<";
    case CompareOp::less_equal: return "<=";
    case CompareOp::greater: return ">";
    case CompareOp::greater_equal: return ">=";
  }
  return "?";
}

bool compare_values(uint64_t lhs, CompareOp op, uint64_t rhs, bool is_signed) {
  const auto signed_lhs = static_cast<int64_t>(lhs);
  const auto signed_rhs = static_cast<int64_t>(rhs);
  switch (op) {
    case CompareOp::equal: return lhs == rhs;
    case CompareOp::not_equal: return lhs != rhs;
    case CompareOp::less: return is_signed ? signed_lhs < signed_rhs : lhs < rhs;
    case CompareOp::less_equal: return is_signed ? signed_lhs <= signed_rhs : lhs <= rhs;
    case CompareOp::greater: return is_signed ? signed_lhs > signed_rhs : lhs > rhs;
    case CompareOp::greater_equal: return is_signed ? signed_lhs >= signed_rhs : lhs >= rhs;
  }
  return false;
}

Result<FilterNode> parse_filter(std::string_view text, std::span<const FilterVariable> variables) {
  return FilterParser(text, variables).parse();
}

bool evaluate_filter(const FilterNode& node, std::span<const uint64_t> values) {
  switch (node.kind) {
    case FilterNode::Kind::comparison: {
      const FilterComparison& comparison = node.comparison;
      return compare_values(operand_value(comparison.lhs, values), comparison.op,
                            operand_value(comparison.rhs, values), comparison.is_signed);
    }
    case FilterNode::Kind::logical_not: return !evaluate_filter(node.children.at(0), values);
    case FilterNode::Kind::logical_and:
      for (const FilterNode& child : node.children) {
        if (!evaluate_filter(child, values)) return false;
      }
      return true;
    case FilterNode::Kind::logical_or:
      for (const FilterNode& child : node.children) {
        if (evaluate_filter(child, values)) return true;
      }
      return false;
  }
  return false;
}

std::string to_string(const FilterNode& node) {
  switch (node.kind) {
    case FilterNode::Kind::comparison: {
      const FilterComparison& comparison = node.comparison;
      return operand_text(comparison.lhs) + " " + std::string(compare_op_symbol(comparison.op)) +
             " " + operand_text(comparison.rhs);
    }
    case FilterNode::Kind::logical_not: return "!(" + to_string(node.children.at(0)) + ")";
    case FilterNode::Kind::logical_and:
    case FilterNode::Kind::logical_or: {
      const std::string_view separator =
          node.kind == FilterNode::Kind::logical_and ? " && " : " || ";
      std::string text;
      for (const FilterNode& child : node.children) {
        if (!text.empty()) text += separator;
        const bool is_chain = child.kind == FilterNode::Kind::logical_and ||
                              child.kind == FilterNode::Kind::logical_or;
        text += is_chain ? "(" + to_string(child) + ")" : to_string(child);
      }
      return text;
    }
  }
  return {};
}

}  // namespace xref
