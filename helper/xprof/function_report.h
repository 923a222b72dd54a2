// --by function: per function, the samples taken in it (self) and the
// samples whose stack passes through it (total, counted once per stack
// however often a recursive function appears in it), as perf report's
// Self and Children columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xprof/frames.h"
#include "xprof/selection.h"

namespace xref {

struct FunctionRow {
  FrameKey key;
  std::string name;
  std::string module;  // path; "[kernel]"; "" for code in no module
  uint64_t self = 0;
  uint64_t total = 0;
};

// Every function with a sample, hottest self first (then total, then name).
std::vector<FunctionRow> function_rows(const Profile& profile, const ProfileSelection& selection);

}  // namespace xref
