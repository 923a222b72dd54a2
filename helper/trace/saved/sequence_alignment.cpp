#include "trace/saved/sequence_alignment.h"

#include <algorithm>
#include <limits>
#include <string>

namespace xref {
namespace {

constexpr int64_t kUnreached = -1;

// The part A[a_begin, a_end) x B[b_begin, b_end) of the edit graph.
struct Box {
  size_t a_begin = 0, a_end = 0, b_begin = 0, b_end = 0;
  int64_t n() const { return static_cast<int64_t>(a_end - a_begin); }
  int64_t m() const { return static_cast<int64_t>(b_end - b_begin); }
};

// A point of the edit graph, relative to its box, on an optimal path.
struct Split {
  int64_t x = 0, y = 0;
  size_t edits = 0;  // of the whole box
};

class Aligner {
 public:
  Aligner(std::span<const uint32_t> a, std::span<const uint32_t> b)
      : a_(a), b_(b), forward_(a.size() + b.size() + 3), backward_(a.size() + b.size() + 3) {}

  Result<void> align(Box box, size_t max_edits) {
    size_t suffix = 0;
    while (box.a_begin < box.a_end && box.b_begin < box.b_end && a_[box.a_begin] == b_[box.b_begin]) {
      steps_.push_back({AlignedKind::same, box.a_begin++, box.b_begin++});
    }
    while (box.a_begin < box.a_end && box.b_begin < box.b_end && a_[box.a_end - 1] == b_[box.b_end - 1]) {
      --box.a_end;
      --box.b_end;
      ++suffix;
    }
    if (box.a_begin == box.a_end) {
      for (size_t j = box.b_begin; j < box.b_end; ++j) steps_.push_back({AlignedKind::only_b, box.a_begin, j});
    } else if (box.b_begin == box.b_end) {
      for (size_t i = box.a_begin; i < box.a_end; ++i) steps_.push_back({AlignedKind::only_a, i, box.b_begin});
    } else {
      auto split = find_split(box, max_edits);
      if (!split) return split.error();
      // Neither half is the whole box: both ends were stripped of matches,
      // so each half needs at least one edit and fewer than the box.
      const size_t x = box.a_begin + static_cast<size_t>(split->x);
      const size_t y = box.b_begin + static_cast<size_t>(split->y);
      if (auto left = align({box.a_begin, x, box.b_begin, y}, split->edits); !left) return left;
      if (auto right = align({x, box.a_end, y, box.b_end}, split->edits); !right) return right;
    }
    for (size_t i = 0; i < suffix; ++i) steps_.push_back({AlignedKind::same, box.a_end + i, box.b_end + i});
    return {};
  }

  std::vector<AlignedStep> take_steps() { return std::move(steps_); }

 private:
  // Forward from the box's start and backward from its end at once, d
  // edits each round, keeping per diagonal k = x - y the furthest point
  // reached with at most d edits. When the two searches meet on a diagonal,
  // the meeting point is on an optimal path: going along a diagonal never
  // makes the rest of the way longer, so the forward point's distance to
  // the end is at most the backward point's, and vice versa.
  Result<Split> find_split(const Box& box, size_t max_edits) {
    const int64_t n = box.n();
    const int64_t m = box.m();
    const int64_t delta = n - m;
    const bool odd = (delta % 2) != 0;
    // Diagonals -m..n, with one unreached slot on either side.
    auto at = [m](int64_t diagonal) { return static_cast<size_t>(diagonal + m + 1); };
    std::fill(forward_.begin(), forward_.begin() + n + m + 3, kUnreached);
    std::fill(backward_.begin(), backward_.begin() + n + m + 3, kUnreached);
    const uint32_t* a = a_.data() + box.a_begin;
    const uint32_t* b = b_.data() + box.b_begin;

    for (int64_t d = 0; d <= (n + m + 1) / 2; ++d) {
      if (2 * d - 1 > static_cast<int64_t>(std::min<size_t>(max_edits, std::numeric_limits<int32_t>::max()))) {
        return too_many_edits(max_edits);
      }
      const int64_t lowest = std::max(-d, -m + ((d - m) % 2 != 0 ? 1 : 0));
      const int64_t highest = std::min(d, n);
      // Forward: (x, y) from (0, 0), matches a[x] == b[y].
      for (int64_t k = lowest; k <= highest; k += 2) {
        int64_t x = furthest(forward_, at, k, d, n, m);
        if (x == kUnreached) continue;
        int64_t y = x - k;
        while (x < n && y < m && a[x] == b[y]) ++x, ++y;
        forward_[at(k)] = x;
        const int64_t backward_x = odd ? backward_[at(delta - k)] : kUnreached;
        if (backward_x != kUnreached && x >= n - backward_x) return found({x, y, static_cast<size_t>(2 * d - 1)}, max_edits);
      }
      // Backward: (x, y) counted from (n, m), matches a[n-1-x] == b[m-1-y].
      for (int64_t c = lowest; c <= highest; c += 2) {
        int64_t x = furthest(backward_, at, c, d, n, m);
        if (x == kUnreached) continue;
        int64_t y = x - c;
        while (x < n && y < m && a[n - 1 - x] == b[m - 1 - y]) ++x, ++y;
        backward_[at(c)] = x;
        const int64_t forward_x = odd ? kUnreached : forward_[at(delta - c)];
        if (forward_x != kUnreached && n - x <= forward_x) return found({n - x, m - y, static_cast<size_t>(2 * d)}, max_edits);
      }
    }
    return make_error(ErrorCode::internal, "sequence alignment: the searches did not meet");
  }

  // The furthest x on diagonal k with at most d edits, before following
  // matches: the point of round d-2, a step right from diagonal k-1 or a
  // step down from diagonal k+1, whichever stays inside the box and goes
  // furthest.
  template <typename At>
  static int64_t furthest(const std::vector<int64_t>& reach, At at, int64_t k, int64_t d, int64_t n, int64_t m) {
    if (d == 0) return 0;
    int64_t x = reach[at(k)];
    const int64_t left = reach[at(k - 1)];
    if (left != kUnreached && left + 1 <= n) x = std::max(x, left + 1);
    const int64_t below = reach[at(k + 1)];
    if (below != kUnreached && below - k <= m) x = std::max(x, below);
    return x;
  }

  static Result<Split> found(Split split, size_t max_edits) {
    if (split.edits > max_edits) return too_many_edits(max_edits);
    return split;
  }

  static Error too_many_edits(size_t max_edits) {
    return make_error(ErrorCode::invalid_argument,
                      "the sequences differ in more than " + std::to_string(max_edits) + " items",
                      "compare smaller or more similar windows");
  }

  std::span<const uint32_t> a_, b_;
  std::vector<int64_t> forward_, backward_;
  std::vector<AlignedStep> steps_;
};

// Within each run of differences, A's items first, then B's (as diff does).
void order_runs(std::vector<AlignedStep>& steps) {
  auto run_begin = steps.begin();
  while (run_begin != steps.end()) {
    if (run_begin->kind == AlignedKind::same) {
      ++run_begin;
      continue;
    }
    auto run_end = std::find_if(run_begin, steps.end(), [](const AlignedStep& step) { return step.kind == AlignedKind::same; });
    std::stable_partition(run_begin, run_end, [](const AlignedStep& step) { return step.kind == AlignedKind::only_a; });
    run_begin = run_end;
  }
}

}  // namespace

Result<std::vector<AlignedStep>> align_sequences(std::span<const uint32_t> a, std::span<const uint32_t> b,
                                                 size_t max_edits) {
  Aligner aligner(a, b);
  if (auto aligned = aligner.align({0, a.size(), 0, b.size()}, max_edits); !aligned) return aligned.error();
  std::vector<AlignedStep> steps = aligner.take_steps();
  order_runs(steps);
  return steps;
}

}  // namespace xref
