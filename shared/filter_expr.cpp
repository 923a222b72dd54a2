#include "filter_expr.h"

#include "identifier_chars.h"
#include "number_parse.h"
#include "parse_error_render.h"

namespace xref {
namespace {

constexpr std::string_view expression_hint =
    "write comparisons such as 'amount > 0', joined with '&&', '||', '!' and parentheses";

enum class TokenKind : uint8_t {
  name,
  number,
  string,  // "text", decoded; prefix when it ended in an unescaped '*'

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
  std::string decoded;              // string
  bool prefix = false;              // string
  Error error;                      // invalid
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

Error error_at(int column, std::string message, std::string_view hint = expression_hint) {
  Error error = make_error(ErrorCode::invalid_argument, std::move(message), std::string(hint));
  error.column = column;
  return error;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr std::string_view string_hint =
    "write a string as \"text\", \"prefix*\" for a prefix; escape \\\" \\\\ \\* \\n \\t \\xHH";

// A quoted string starting at text[start] ('"'): its decoded bytes, whether
// it ended in an unescaped '*' (then not part of the bytes), and where it
// ends; or the error at the offending column.
Result<size_t> scan_string(std::string_view text, size_t start, std::string& decoded, bool& prefix) {
  size_t position = start + 1;
  while (position < text.size()) {
    const char c = text[position];
    if (c == '"') return position + 1;
    if (c == '*') {
      // Unescaped, it may only end the string: a prefix match.
      if (position + 1 < text.size() && text[position + 1] == '"') {
        prefix = true;
        return position + 2;
      }
      return error_at(static_cast<int>(position) + 1, "'*' may only end a string (a prefix match)",
                      "write \"se*\" for strings starting with se, or \\* for a '*' itself");
    }
    if (c != '\\') {
      decoded += c;
      ++position;
      continue;
    }
    const int column = static_cast<int>(position) + 1;
    if (position + 1 >= text.size()) return error_at(column, "the string ends in a lone '\\'", string_hint);
    const char escaped = text[position + 1];
    position += 2;
    switch (escaped) {
      case '"': decoded += '"'; break;
      case '\\': decoded += '\\'; break;
      case '*': decoded += '*'; break;
      case 'n': decoded += '\n'; break;
      case 't': decoded += '\t'; break;
      case 'x': {
        const int high = position < text.size() ? hex_digit(text[position]) : -1;
        const int low = position + 1 < text.size() ? hex_digit(text[position + 1]) : -1;
        if (high < 0 || low < 0) return error_at(column, "expected two hex digits after '\\x'", string_hint);
        decoded += static_cast<char>(high * 16 + low);
        position += 2;
        break;
      }
      default: {
        // Shown printable: the message stays one line whatever byte follows the '\\'.
        const auto byte = static_cast<unsigned char>(escaped);
        static constexpr char kHex[] = "0123456789abcdef";
        const std::string shown = byte < 0x20 || byte == 0x7f ? std::string("x") + kHex[byte >> 4] + kHex[byte & 15]
                                                              : std::string(1, escaped);
        return error_at(column, "unknown escape '\\" + shown + "'", string_hint);
      }
    }
  }
  return error_at(static_cast<int>(start) + 1, "unterminated string: no closing '\"'", string_hint);
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
    } else if (c == '"') {
      Token token;
      auto end = scan_string(text, position, token.decoded, token.prefix);
      if (!end) {
        push_invalid(end.error());
        break;
      }
      token.kind = TokenKind::string;
      token.text = text.substr(position, *end - position);
      token.column = column;
      position = *end;
      tokens.push_back(std::move(token));
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
  // A string literal may hold any byte: the message stays one printable line.
  std::string text = "'";
  for (const char c : token.text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      text += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      text += "\\x";
      text += kHex[byte >> 4];
      text += kHex[byte & 15];
    } else {
      text += c;
    }
  }
  return text + "'";
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
    if (comparison.lhs.is_string || comparison.rhs.is_string) {
      if (auto checked = check_string_comparison(comparison); !checked) return checked.error();
      return node;
    }
    comparison.is_signed = makes_signed(comparison.lhs) || makes_signed(comparison.rhs);
    return node;
  }

  // A string comparison is a :string fetch ==/!= a quoted constant, put
  // with the fetch on the left; the constant must fit in the fetch's bound.
  Result<void> check_string_comparison(FilterComparison& comparison) const {
    const int column = comparison.column;
    if (comparison.lhs.is_constant && comparison.lhs.is_string) {
      std::swap(comparison.lhs, comparison.rhs);
    }
    const FilterOperand& fetch = comparison.lhs;
    const FilterOperand& constant = comparison.rhs;
    if (fetch.is_constant) {
      return error_at(column, "a quoted string compares only with a :string fetch",
                      "fetch the string as NAME=+0(%di):string and compare NAME == \"text\"");
    }
    if (!fetch.is_string) {
      return error_at(column, "'" + fetch.name + "' is a number; only a :string fetch compares with a quoted string",
                      "fetch it as :string, or compare it with a number");
    }
    if (!constant.is_constant || !constant.is_string) {
      return error_at(column, "'" + fetch.name + "' is a string; compare it with a quoted string such as \"text\"",
                      string_hint);
    }
    if (comparison.op != CompareOp::equal && comparison.op != CompareOp::not_equal) {
      return error_at(column, "strings compare only with '==' and '!='",
                      "write NAME == \"text\", NAME != \"text\" or NAME == \"prefix*\"");
    }
    const uint16_t bound = variables_[fetch.slot].string_bound;
    if (constant.text.size() > bound) {
      return error_at(column,
                      "the string compared with '" + fetch.name + "' is " + std::to_string(constant.text.size()) +
                          " bytes; '" + fetch.name + "' keeps at most " + std::to_string(bound),
                      "fetch it as :string[" + std::to_string(constant.text.size()) + "] or more");
    }
    return {};
  }

  bool makes_signed(const FilterOperand& operand) const {
    if (operand.is_string) return false;
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
        operand.is_string = variables_[*slot].string_bound != 0;
        operand.string_slot = variables_[*slot].string_slot;
        advance();
        return operand;
      }
      case TokenKind::string:
        operand.is_constant = true;
        operand.is_string = true;
        operand.text = token.decoded;
        operand.prefix = token.prefix;
        advance();
        return operand;
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

// A string constant as filter text, escaped so that it parses back.
std::string string_text(const FilterOperand& operand) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text = "\"";
  for (const char c : operand.text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '*') {
      text += '\\';
      text += c;
    } else if (c == '\n') {
      text += "\\n";
    } else if (c == '\t') {
      text += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      text += "\\x";
      text += digits[byte >> 4];
      text += digits[byte & 15];
    } else {
      text += c;
    }
  }
  return text + (operand.prefix ? "*\"" : "\"");
}

std::string operand_text(const FilterOperand& operand) {
  if (operand.is_constant && operand.is_string) return string_text(operand);
  if (!operand.is_constant) return operand.name;
  if (operand.negative) return "-" + std::to_string(0 - operand.constant);
  return std::to_string(operand.constant);
}

}  // namespace

std::vector<FilterVariable> filter_variables(std::span<const FetchItem> fetches) {
  std::vector<FilterVariable> variables;
  const std::vector<int> string_slots = fetch_string_slots(fetches);
  for (size_t i = 0; i < fetches.size(); ++i) {
    variables.push_back({fetches[i].name, fetches[i].type.is_signed, fetches[i].type.string_bound,
                         static_cast<uint8_t>(string_slots[i] < 0 ? 0 : string_slots[i])});
  }
  return variables;
}

bool string_matches(std::string_view fetched, bool cut, std::string_view constant, bool prefix) {
  if (prefix) return fetched.substr(0, constant.size()) == constant;
  return !cut && fetched == constant;
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

bool evaluate_filter(const FilterNode& node, std::span<const uint64_t> values, std::span<const std::string> strings) {
  switch (node.kind) {
    case FilterNode::Kind::comparison: {
      const FilterComparison& comparison = node.comparison;
      if (comparison.rhs.is_string) {
        const uint8_t slot = comparison.lhs.slot;
        const std::string_view fetched = slot < strings.size() ? std::string_view(strings[slot]) : "";
        const bool cut = ((slot < values.size() ? values[slot] : 0) & XREF_STRING_CUT) != 0;
        const bool matches = string_matches(fetched, cut, comparison.rhs.text, comparison.rhs.prefix);
        return comparison.op == CompareOp::equal ? matches : !matches;
      }
      return compare_values(operand_value(comparison.lhs, values), comparison.op,
                            operand_value(comparison.rhs, values), comparison.is_signed);
    }
    case FilterNode::Kind::logical_not: return !evaluate_filter(node.children.at(0), values, strings);
    case FilterNode::Kind::logical_and:
      for (const FilterNode& child : node.children) {
        if (!evaluate_filter(child, values, strings)) return false;
      }
      return true;
    case FilterNode::Kind::logical_or:
      for (const FilterNode& child : node.children) {
        if (evaluate_filter(child, values, strings)) return true;
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
