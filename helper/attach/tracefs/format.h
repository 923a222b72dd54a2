// The layout of trace event records as tracefs describes it in the
// `format` files (events/GROUP/EVENT/format, events/header_page):
//   ID: 2326
//   field:u64 sp;	offset:16;	size:8;	signed:0;
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace xref {

struct EventField {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
};

struct EventFormat {
  uint32_t id = 0;  // 0 when the text has no ID line (header_page)
  std::vector<EventField> fields;

  const EventField* field(std::string_view name) const;
};

Result<EventFormat> parse_event_format(std::string_view text);

// The field's bytes as a little-endian unsigned number (at most 8 bytes);
// nothing when the record is too short for it.
std::optional<uint64_t> read_field(std::span<const uint8_t> record, const EventField& field);

// A `__data_loc char[]` field (a :string fetch) whose 32-bit value is
// `data_loc` (length << 16 | offset in the record): the string without its
// NUL; nothing when the kernel could not read it (length 0, printed
// "(fault)") or the record is too short.
std::optional<std::string> read_string_field(std::span<const uint8_t> record, uint64_t data_loc);

}  // namespace xref
