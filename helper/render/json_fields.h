// Fields of the JSON the renderer reads (live_trace windows, live_probe
// documents, protocol answers), read leniently: a saved file or a front end
// may leave one out, and text shows what is there instead of failing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace xref::render {

// The string at `key`, "" when absent or not a string.
std::string text_at(const nlohmann::json& object, std::string_view key);
// An unsigned integer at `key`; nullopt when absent or not one.
std::optional<uint64_t> count_at(const nlohmann::json& object, std::string_view key);
// The same, 0 when absent.
uint64_t count_or_zero(const nlohmann::json& object, std::string_view key);
// An address: "0x1c20" (as the helper and the front ends write them) or an
// unsigned integer; nullopt for anything else ("0x12zz", "123", -1). The one
// parser of addresses in JSON, the protocol's included.
std::optional<uint64_t> address_value(const nlohmann::json& value);
// The address at `key`, as address_value reads it; nullopt when absent.
std::optional<uint64_t> address_at(const nlohmann::json& object, std::string_view key);
// The array or object at `key`, or an empty one.
const nlohmann::json& array_at(const nlohmann::json& object, std::string_view key);
const nlohmann::json& object_at(const nlohmann::json& object, std::string_view key);
// "1 hit", "2 hits", "3 matches".
std::string plural(uint64_t count, std::string_view word);

}  // namespace xref::render
