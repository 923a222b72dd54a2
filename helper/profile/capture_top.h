// A capture's hottest functions for a debugger to show at its next stop
// (docs/profile.md, "In a debugger"): the rows of `report --by function
// --top N`, each with the live address where the function took the most
// samples of its own (its start when it took none), so the debugger names
// the function and its source line in its own words.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "xprof/profile.h"

namespace xref {

// {"samples", "rows": [{"name", "module", "self", "total", "self_share",
// "total_share", "live", "static"}], "rows_not_shown", "samples_not_shown"};
// shares are fractions of every sample. Null when the capture has no sample.
nlohmann::json capture_top_json(const Profile& profile, size_t top);

}  // namespace xref
