#include "output/json_writer.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "hex.h"

namespace xref {
namespace {

// What needs more than a copy: quotes, backslashes, control characters
// (escaped), and bytes past ASCII (checked for UTF-8).
bool needs_care(unsigned char byte) { return byte < 0x20 || byte == '"' || byte == '\\' || byte >= 0x80; }

}  // namespace

void append_json_string(std::string& out, std::string_view value) {
  size_t plain = 0;
  while (plain < value.size() && !needs_care(static_cast<unsigned char>(value[plain]))) ++plain;
  if (plain == value.size()) {
    out += '"';
    out.append(value);
    out += '"';
    return;
  }
  // Rare (a name or a log line with such bytes): nlohmann's own escaping,
  // so the spelling is json_text()'s, invalid UTF-8 included.
  out += nlohmann::json(std::string(value)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_string(std::string_view value) {
  std::string out;
  append_json_string(out, value);
  return out;
}

void append_decimal(std::string& out, uint64_t value) {
  char buffer[24];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, written.ptr);
}

void append_signed_decimal(std::string& out, int64_t value) {
  char buffer[24];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, written.ptr);
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  out_ += '"';
  out_.append(name);
  out_ += "\":";
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view value) {
  separate();
  append_json_string(out_, value);
  return *this;
}

JsonWriter& JsonWriter::hex(uint64_t value) {
  separate();
  out_ += '"';
  append_hex(out_, value);
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::number(uint64_t value) {
  separate();
  append_decimal(out_, value);
  return *this;
}

JsonWriter& JsonWriter::signed_number(int64_t value) {
  separate();
  append_signed_decimal(out_, value);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_.append(json);
  return *this;
}

}  // namespace xref
