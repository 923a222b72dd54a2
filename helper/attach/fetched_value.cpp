#include "attach/fetched_value.h"

#include <algorithm>
#include <cstring>

#include "bpf_abi.h"
#include "hex.h"
#include "output/json_envelope.h"

namespace xref {
namespace {

std::string errno_name(int error) {
  const int positive = error < 0 ? -error : error;
  if (positive == 14) return "EFAULT";
  if (positive == 22) return "EINVAL";
  return std::string(std::strerror(positive));
}

}  // namespace

std::string fetch_error_text(int error) {
  return "unreadable: " + errno_name(error) + " (" + std::to_string(error) + ")";
}

std::string string_slot_text(const __u8* slot, size_t bound) {
  const auto* begin = reinterpret_cast<const char*>(slot);
  const size_t limit = std::min(bound, size_t{XREF_STRING_BUFFER_BYTES});
  return std::string(begin, strnlen(begin, limit));
}

std::vector<FetchedValue> fetched_values(const std::vector<FetchItem>& items, size_t count, uint16_t failed,
                                         const __u64* values, const __s16* errors, const __u8* strings) {
  std::vector<FetchedValue> fetched;
  const std::vector<int> string_slots = fetch_string_slots(items);
  for (size_t i = 0; i < items.size() && i < count && i < XREF_FETCH_MAX_ITEMS; ++i) {
    FetchedValue value;
    value.name = items[i].name;
    value.type = items[i].type;
    if ((failed >> i) & 1u) {
      value.error = errors[i];
    } else {
      value.value = values[i];
      const int slot = string_slots[i];
      if (slot >= 0 && slot < XREF_FETCH_MAX_STRINGS && strings != nullptr) {
        const size_t length = std::min<uint64_t>(values[i] & XREF_STRING_LENGTH_MASK, items[i].type.string_bound);
        value.text = string_slot_text(strings + static_cast<size_t>(slot) * XREF_STRING_BUFFER_BYTES, length);
      }
    }
    fetched.push_back(std::move(value));
  }
  return fetched;
}

nlohmann::json fetched_json(const FetchedValue& value) {
  nlohmann::json json = {{"name", value.name}, {"type", fetch_type_name(value.type)}};
  if (value.value && value.type.is_string()) {
    json["string"] = value.text;
    json["length"] = value.text.size();
    json["truncated"] = value.truncated();
  } else if (value.value) {
    json["value"] = to_hex(*value.value);
    if (value.type.is_signed) json["signed_value"] = static_cast<int64_t>(*value.value);
  } else {
    json["value"] = nullptr;
    json["error"] = fetch_error_text(value.error);
  }
  return json;
}

}  // namespace xref

namespace xref {

std::string fetched_string_text(const std::string& bytes, bool truncated, size_t bound) {
  std::string quoted = json_text(nlohmann::json(bytes));
  if (!truncated) return quoted;
  // The ellipsis inside the quotes: the string goes on past them.
  quoted.insert(quoted.size() - 1, "\u2026");
  return quoted + " (cut at " + std::to_string(bound) + " bytes)";
}

std::string fetched_text(const nlohmann::json& fetch, bool signed_decimal) {
  const std::string name = fetch.value("name", std::string());
  if (fetch.contains("string") && fetch["string"].is_string()) {
    return name + "=" + fetched_string_text(fetch["string"].get<std::string>(), fetch.value("truncated", false),
                                            fetch.value("length", size_t{0}));
  }
  if (!fetch.contains("value") || fetch["value"].is_null()) return name + "=" + fetch.value("error", std::string("?"));
  if (signed_decimal && fetch.contains("signed_value") && fetch["signed_value"].is_number_integer()) {
    return name + "=" + std::to_string(fetch["signed_value"].get<int64_t>());
  }
  return name + "=" + fetch["value"].get<std::string>();
}

}  // namespace xref
