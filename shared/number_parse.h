// Numbers typed by users: addresses, values, counts. Decimal or 0x-hex,
// validated where parsed, with the column of the mistake.
#pragma once

#include <cstdint>
#include <string_view>

#include "result.h"

namespace xref {

// Parses an unsigned 64-bit number: decimal, or hex with a 0x/0X prefix.
// `what` names the thing in the error ("address", "--max-hits").
// `column_base` is the 1-based column of text[0] in a larger input.
Result<uint64_t> parse_u64(std::string_view text, std::string_view what, int column_base = 1);

// Like parse_u64 but also accepts a leading '-' for negative values.
Result<int64_t> parse_i64(std::string_view text, std::string_view what, int column_base = 1);

}  // namespace xref
