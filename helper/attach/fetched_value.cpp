#include "attach/fetched_value.h"

#include <cstring>

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

nlohmann::json fetched_json(const FetchedValue& value) {
  nlohmann::json json = {{"name", value.name}, {"type", fetch_type_name(value.type)}};
  if (value.value) {
    json["value"] = to_hex(*value.value);
    if (value.type.is_signed) json["signed_value"] = static_cast<int64_t>(*value.value);
  } else {
    json["value"] = nullptr;
    json["error"] = "unreadable: " + errno_name(value.error) + " (" + std::to_string(value.error) + ")";
  }
  return json;
}

}  // namespace xref
