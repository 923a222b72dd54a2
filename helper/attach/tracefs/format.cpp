#include "attach/tracefs/format.h"

#include <cstring>

#include <charconv>

namespace xref {
namespace {

// "offset:16;" -> 16, after `key`.
std::optional<uint32_t> number_after(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = line.data() + at + key.size();
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(begin, line.data() + line.size(), value);
  if (error != std::errc() || end == begin) return std::nullopt;
  return value;
}

// "field:unsigned long __probe_ip;" -> "__probe_ip"; "field:char data[4080];" -> "data";
// "field:__data_loc char[] key;" -> "key"
std::string field_name(std::string_view line) {
  const size_t start = line.find("field:");
  const size_t semicolon = line.find(';', start);
  if (start == std::string_view::npos || semicolon == std::string_view::npos) return {};
  std::string_view declaration = line.substr(start + 6, semicolon - start - 6);
  // An array's size ends the declaration; a string's "__data_loc char[] key"
  // has its brackets in the type.
  if (const size_t bracket = declaration.rfind('[');
      bracket != std::string_view::npos && declaration.ends_with(']')) {
    declaration = declaration.substr(0, bracket);
  }
  while (!declaration.empty() && declaration.back() == ' ') declaration.remove_suffix(1);
  const size_t space = declaration.find_last_of(" \t");
  return std::string(space == std::string_view::npos ? declaration : declaration.substr(space + 1));
}

}  // namespace

const EventField* EventFormat::field(std::string_view name) const {
  for (const EventField& candidate : fields) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

Result<EventFormat> parse_event_format(std::string_view text) {
  EventFormat format;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.rfind("ID:", 0) == 0) {
      if (auto id = number_after(line, "ID: ")) format.id = *id;
      continue;
    }
    if (line.find("field:") == std::string_view::npos) continue;
    EventField field;
    field.name = field_name(line);
    auto offset = number_after(line, "offset:");
    auto size = number_after(line, "size:");
    auto is_signed = number_after(line, "signed:");
    if (field.name.empty() || !offset || !size) {
      return make_error(ErrorCode::unsupported, "unexpected trace event format line: " + std::string(line));
    }
    field.offset = *offset;
    field.size = *size;
    field.is_signed = is_signed && *is_signed != 0;
    format.fields.push_back(std::move(field));
  }
  if (format.fields.empty()) return make_error(ErrorCode::unsupported, "a trace event format without fields");
  return format;
}

std::optional<uint64_t> read_field(std::span<const uint8_t> record, const EventField& field) {
  if (field.size == 0 || field.size > 8 || field.offset + field.size > record.size()) return std::nullopt;
  uint64_t value = 0;
  for (uint32_t i = 0; i < field.size; ++i) value |= uint64_t{record[field.offset + i]} << (8 * i);
  return value;
}

std::optional<std::string> read_string_field(std::span<const uint8_t> record, uint64_t data_loc) {
  const size_t offset = data_loc & 0xffff;
  const size_t length = (data_loc >> 16) & 0xffff;
  if (length == 0 || offset + length > record.size()) return std::nullopt;
  const auto* begin = reinterpret_cast<const char*>(record.data() + offset);
  return std::string(begin, strnlen(begin, length));
}

}  // namespace xref
