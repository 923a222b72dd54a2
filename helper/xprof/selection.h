// Which samples a report counts: every sample of the capture, or with
// --within FN only those whose stack passes through FN (shares are then of
// those samples, and every report says so). Stacks that are not whole, and
// stacks sampled in kernel mode, are counted here once for every report.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "result.h"
#include "xprof/profile.h"

namespace xref {

struct ProfileSelection {
  std::string within;              // --within as given; "" when every stack counts
  std::vector<uint32_t> within_functions;  // the functions it names
  std::vector<uint64_t> counts;    // per stack: its samples when selected, else 0
  uint64_t samples = 0;            // selected samples: what shares are of
  uint64_t profile_samples = 0;    // every sample of the capture
  uint64_t incomplete = 0;         // selected samples whose stack is not whole
  uint64_t in_kernel = 0;          // selected samples taken in kernel mode
  std::map<std::string, uint64_t> incomplete_by_end;  // stack_end_name -> selected samples

  double share(uint64_t count) const;
};

// count / total, 0 when total is 0.
double share_of(uint64_t count, uint64_t total);

// empty_capture when the capture has no sample, or nothing passes through
// `within` (also when no function of the capture answers to it).
Result<ProfileSelection> select_samples(const Profile& profile, const std::string& within = "");

}  // namespace xref
