#include "render/json_fields.h"

#include <charconv>

namespace xref::render {
namespace {

const nlohmann::json* member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

}  // namespace

std::string text_at(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

std::optional<uint64_t> count_at(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* value = member(object, key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<uint64_t>();
  if (value->is_number_integer() && value->get<int64_t>() >= 0) return static_cast<uint64_t>(value->get<int64_t>());
  return std::nullopt;
}

uint64_t count_or_zero(const nlohmann::json& object, std::string_view key) { return count_at(object, key).value_or(0); }

std::optional<uint64_t> address_value(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) {
    const int64_t number = value.get<int64_t>();
    return number >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(number)) : std::nullopt;
  }
  if (!value.is_string()) return std::nullopt;
  const std::string& text = value.get_ref<const std::string&>();
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return std::nullopt;
  uint64_t number = 0;
  const auto [end, error] = std::from_chars(text.data() + 2, text.data() + text.size(), number, 16);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return number;
}

std::optional<uint64_t> address_at(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* value = member(object, key);
  return value == nullptr ? std::nullopt : address_value(*value);
}

const nlohmann::json& array_at(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_array() ? *value : empty;
}

const nlohmann::json& object_at(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_object() ? *value : empty;
}

std::string plural(uint64_t count, std::string_view word) {
  std::string text = std::to_string(count) + " " + std::string(word);
  if (count != 1) text += word.ends_with("s") || word.ends_with("ch") ? "es" : "s";
  return text;
}

}  // namespace xref::render
