// A capture's hottest functions as a debugger shows them at its next stop
// (docs/profile.md, "In a debugger"): the table of `profile report --by
// function`, each function as the debugger (or the helper) names the
// address where it took the most samples, with its source line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "render/names.h"

namespace xref::render {

// `top`: profile/capture_top.h's JSON.
std::vector<std::string> profile_top_lines(const nlohmann::json& top, Names& names);
// The live addresses those lines name.
std::vector<uint64_t> profile_top_addresses(const nlohmann::json& top);

}  // namespace xref::render
