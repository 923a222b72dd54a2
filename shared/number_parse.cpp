#include "number_parse.h"

#include <limits>
#include <string>

namespace xref {
namespace {

Error number_error(std::string_view what, std::string_view text, std::string detail, int column) {
  Error error = make_error(ErrorCode::invalid_argument,
                           std::string(what) + " '" + std::string(text) + "': " + detail,
                           "write a decimal number or a 0x-prefixed hex number");
  error.column = column;
  return error;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

}  // namespace

Result<uint64_t> parse_u64(std::string_view text, std::string_view what, int column_base) {
  if (text.empty()) return number_error(what, text, "empty number", column_base);
  size_t position = 0;
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    position = 2;
  } else if (text == "0x" || text == "0X") {
    return number_error(what, text, "hex prefix without digits", column_base + 2);
  }
  uint64_t value = 0;
  for (; position < text.size(); ++position) {
    const int digit = digit_value(text[position]);
    const int column = column_base + static_cast<int>(position);
    if (digit >= static_cast<int>(base)) {
      return number_error(what, text, std::string("unexpected character '") + text[position] + "'",
                          column);
    }
    if (value > (std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(digit)) / base) {
      return number_error(what, text, "does not fit in 64 bits", column);
    }
    value = value * base + static_cast<uint64_t>(digit);
  }
  return value;
}

Result<int64_t> parse_i64(std::string_view text, std::string_view what, int column_base) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  auto magnitude = parse_u64(digits, what, column_base + (negative ? 1 : 0));
  if (!magnitude) return magnitude.error();
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (*magnitude > limit) {
    return number_error(what, text, "does not fit in a signed 64-bit value", column_base);
  }
  if (negative) return static_cast<int64_t>(0 - *magnitude);
  return static_cast<int64_t>(*magnitude);
}

}  // namespace xref
