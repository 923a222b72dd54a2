#include "watch/address_spec.h"

#include <algorithm>
#include <cctype>

#include "number_parse.h"
#include "parse_error_render.h"

namespace xref {
namespace {

bool starts_number(const std::string& text) { return !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])); }

Error address_error(const std::string& spelled, const std::string& why) {
  return make_error(ErrorCode::invalid_argument, "watch " + quoted_text(spelled) + ": " + why,
                    "name a data symbol (g_total, libfoo.so:g_x, g_config+0x10) or a live address (0x7f..), "
                    "each with an optional :LEN");
}

}  // namespace

Result<AddressSpec> parse_address_spec(const std::string& text) {
  AddressSpec spec;
  spec.spelled = text;
  if (text.empty()) return address_error(text, "an empty address");
  if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return address_error(text, "a control character is in no address");
  }
  std::string rest = text;
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos && starts_number(rest.substr(colon + 1))) {
    auto length = parse_u64(rest.substr(colon + 1), "LEN");
    if (!length) return address_error(text, length.error().message);
    spec.length = *length;
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return address_error(text, "no address before :LEN");
  if (starts_number(rest)) {
    auto live = parse_u64(rest, "address");
    if (!live) return address_error(text, live.error().message);
    spec.live_address = *live;
    return spec;
  }
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    spec.module = rest.substr(0, colon);
    rest = rest.substr(colon + 1);
    if (spec.module.empty() || rest.empty()) return address_error(text, "MODULE:SYM needs both");
  }
  const size_t sign = rest.find_first_of("+-");
  if (sign != std::string::npos) {
    auto offset = parse_i64(rest.substr(sign + (rest[sign] == '+' ? 1 : 0)), "offset");
    if (!offset) return address_error(text, offset.error().message);
    spec.offset = *offset;
    rest = rest.substr(0, sign);
  }
  if (rest.empty() || rest.find(':') != std::string::npos) return address_error(text, "no symbol name");
  spec.symbol = rest;
  return spec;
}

Result<FollowSpec> parse_follow_spec(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::invalid_argument, "--follow " + quoted_text(text) + ": " + why,
                      "write SLOT->+OFF:LEN, e.g. --follow 'moving_slot->+8:8' (the 8 bytes 8 past where "
                      "moving_slot points)");
  };
  FollowSpec spec;
  spec.spelled = text;
  const size_t arrow = text.find("->");
  if (arrow == std::string::npos) return fail("no '->' between the slot and the offset");
  auto slot = parse_address_spec(text.substr(0, arrow));
  if (!slot) return fail(slot.error().message);
  if (slot->length && *slot->length != 8) return fail("a pointer slot is 8 bytes");
  spec.slot = *slot;
  std::string rest = text.substr(arrow + 2);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return fail("no :LEN after the offset");
  auto length = parse_u64(rest.substr(colon + 1), "LEN");
  if (!length) return fail(length.error().message);
  spec.length = *length;
  std::string offset = rest.substr(0, colon);
  if (!offset.empty() && offset[0] == '+') offset = offset.substr(1);
  if (offset.empty()) return fail("no offset after '->' (write ->+0 for the pointed-to start)");
  auto value = parse_i64(offset, "offset");
  if (!value) return fail(value.error().message);
  spec.offset = *value;
  return spec;
}

}  // namespace xref
