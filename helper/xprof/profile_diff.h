// `xref profile diff A B`: each function's self share in A and in B and the
// change in points. Functions are matched by their module's build-id and
// start address first (the same code in both), then by module file name and
// function name (the same function of another build, with --other).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "result.h"
#include "xprof/profile.h"

namespace xref {

struct DiffOptions {
  std::string other_build_id;  // --other's build-id; "" when not given
  std::string other_path;
  double min_delta_points = 0;  // rows changing less are left out (counted)
};

struct DiffRow {
  std::string name;
  std::string module;  // B's when in B, else A's
  uint64_t before_samples = 0;
  uint64_t after_samples = 0;
  double before_share = 0;  // of A's samples
  double after_share = 0;   // of B's samples
  std::string matched_by;   // "address", "name", "before_only", "after_only"
  double change_points() const { return (after_share - before_share) * 100.0; }
};

struct ProfileDiff {
  std::vector<DiffRow> rows;  // largest |change| first
  uint64_t before_samples = 0;
  uint64_t after_samples = 0;
  uint64_t filtered = 0;      // rows under --min-delta
  bool across_builds = false;  // the executables' build-ids differ
  std::string before_build_id;
  std::string after_build_id;
};

// empty_capture when either has no sample; capture_mismatch when the
// executables' build-ids differ and no --other was given, or --other is not
// B's build.
Result<ProfileDiff> diff_profiles(const Profile& before, const Profile& after, const DiffOptions& options);

}  // namespace xref
