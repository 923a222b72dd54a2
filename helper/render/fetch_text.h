// Fetched values as text: "req=0x7ff3106f6a80", "n=-2" (signed fetches in
// decimal, the others in hex as the JSON writes them), "p=<unreadable: EFAULT>".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace xref::render {

// One fetched value of the JSON ({name, value, signed_value?, error?}).
std::string fetch_text(const nlohmann::json& fetch);
// A :string fetch's value: "set", or "xxx…" (cut at 64 bytes).
std::string string_text(const std::string& bytes, bool truncated, uint64_t bound);
// An array of them, one space apart; `skip_target` leaves out the one named
// "target" (an indirect call's live target, shown by name instead).
std::string fetches_text(const nlohmann::json& fetches, bool skip_target = false);

}  // namespace xref::render
