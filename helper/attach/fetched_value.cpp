#include "attach/fetched_value.h"

#include <cstring>

#include "bpf_abi.h"
#include "hex.h"

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

std::vector<FetchedValue> fetched_values(const std::vector<FetchItem>& items, size_t count, uint16_t failed,
                                         const __u64* values, const __s16* errors) {
  std::vector<FetchedValue> fetched;
  for (size_t i = 0; i < items.size() && i < count && i < XREF_FETCH_MAX_ITEMS; ++i) {
    FetchedValue value;
    value.name = items[i].name;
    value.type = items[i].type;
    if ((failed >> i) & 1u) {
      value.error = errors[i];
    } else {
      value.value = values[i];
    }
    fetched.push_back(std::move(value));
  }
  return fetched;
}

nlohmann::json fetched_json(const FetchedValue& value) {
  nlohmann::json json = {{"name", value.name}, {"type", fetch_type_name(value.type)}};
  if (value.value) {
    json["value"] = to_hex(*value.value);
    if (value.type.is_signed) json["signed_value"] = static_cast<int64_t>(*value.value);
  } else {
    json["value"] = nullptr;
    json["error"] = fetch_error_text(value.error);
  }
  return json;
}

}  // namespace xref
