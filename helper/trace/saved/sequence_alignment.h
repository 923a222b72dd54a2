// An optimal alignment of two sequences: the longest common subsequence is
// kept, every other item is only in A or only in B (a shortest edit script).
// Myers' O((N+M)·D) algorithm in its linear-space form ("An O(ND)
// Difference Algorithm and Its Variations", 1986, section 4b): memory stays
// O(N+M), time grows with D, the number of items not kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "result.h"

namespace xref {

enum class AlignedKind { same, only_a, only_b };

struct AlignedStep {
  AlignedKind kind = AlignedKind::same;
  size_t a = 0;  // index in A (same, only_a)
  size_t b = 0;  // index in B (same, only_b)
};

// Items are compared as numbers: give each distinct key one number first.
// The steps cover A and B in order; in a run of differences the items only
// in A come before those only in B. More than `max_edits` items not kept
// is refused (invalid_argument) instead of spending time quadratic in them.
Result<std::vector<AlignedStep>> align_sequences(std::span<const uint32_t> a, std::span<const uint32_t> b,
                                                 size_t max_edits);

}  // namespace xref
