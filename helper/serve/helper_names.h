// What serve takes from the target itself: the helper's own names of
// addresses (for text where the debugger named none) and function names
// for Tab completion.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "serve/names_cache.h"

namespace xref::serve {

// The helper's own Names for a process (render/helper_names once it exists).
NamesCache::HelperNames helper_names_factory();

// Function names of the process's modules that start with `partial` (a
// "module:" prefix picks the module), as nm -C prints them; at most kMaxCandidates.
constexpr size_t kMaxCandidates = 200;
std::vector<std::string> function_candidates(pid_t pid, const std::string& partial);

}  // namespace xref::serve
