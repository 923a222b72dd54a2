// The stacks the program counted, read back from its maps and turned into
// a Profile's locations, functions, stacks and samples: each live pc as a
// module and a static VA, named from the module's symbol table (a return
// address by the call before it, address - 1).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "profile/capture_modules.h"
#include "profile_abi.h"
#include "xprof/profile.h"

namespace xref {

struct RawStack {
  std::vector<uint64_t> pcs;  // live, leaf first
  uint8_t end = 0;            // XREF_STACK_*
  bool in_kernel = false;
};

// counts: {stack id, tid} -> samples. Stacks without samples are dropped.
void fill_profile_stacks(Profile& profile, const CaptureModules& modules,
                         const std::map<uint64_t, RawStack>& stacks,
                         const std::map<std::pair<uint64_t, uint32_t>, uint64_t>& counts);

StackEnd stack_end_of(uint8_t end);

}  // namespace xref
