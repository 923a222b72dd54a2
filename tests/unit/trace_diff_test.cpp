// sequence_alignment, checked against a plain LCS table.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sequence_alignment.h"

namespace xref {
namespace {

// --- the aligner ----------------------------------------------------------

std::vector<AlignedStep> aligned(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  auto steps = align_sequences(a, b, 1000000);
  EXPECT_TRUE(steps) << steps.error().message;
  return steps ? *steps : std::vector<AlignedStep>{};
}

// "=1 -2 +9": the steps with the item each shows.
std::string script(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::string text;
  for (const AlignedStep& step : aligned(a, b)) {
    if (!text.empty()) text += " ";
    switch (step.kind) {
      case AlignedKind::same: text += "=" + std::to_string(a[step.a]); break;
      case AlignedKind::only_a: text += "-" + std::to_string(a[step.a]); break;
      case AlignedKind::only_b: text += "+" + std::to_string(b[step.b]); break;
    }
  }
  return text;
}

TEST(TraceDiffAlignment, Identical) { EXPECT_EQ(script({1, 2, 3}, {1, 2, 3}), "=1 =2 =3"); }

TEST(TraceDiffAlignment, Insertion) { EXPECT_EQ(script({1, 2, 3}, {1, 2, 9, 3}), "=1 =2 +9 =3"); }

TEST(TraceDiffAlignment, Deletion) { EXPECT_EQ(script({1, 2, 9, 3}, {1, 2, 3}), "=1 =2 -9 =3"); }

TEST(TraceDiffAlignment, SubstitutionListsAFirst) {
  EXPECT_EQ(script({1, 2, 3}, {1, 7, 3}), "=1 -2 +7 =3");
  EXPECT_EQ(script({1, 2, 5, 3}, {1, 7, 8, 3}), "=1 -2 -5 +7 +8 =3");
}

TEST(TraceDiffAlignment, Empty) {
  EXPECT_EQ(script({}, {}), "");
  EXPECT_EQ(script({}, {4, 5}), "+4 +5");
  EXPECT_EQ(script({4, 5}, {}), "-4 -5");
}

TEST(TraceDiffAlignment, KeepsTheLongestCommonSubsequence) {
  // "abcabba" / "cbabac", Myers' example: 4 in common, 5 edits.
  const std::vector<uint32_t> a = {1, 2, 3, 1, 2, 2, 1};
  const std::vector<uint32_t> b = {3, 2, 1, 2, 1, 3};
  size_t same = 0;
  for (const AlignedStep& step : aligned(a, b)) same += step.kind == AlignedKind::same;
  EXPECT_EQ(same, 4u);
}

size_t lcs_length(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<size_t>> table(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      table[i][j] = a[i - 1] == b[j - 1] ? table[i - 1][j - 1] + 1 : std::max(table[i - 1][j], table[i][j - 1]);
    }
  }
  return table[a.size()][b.size()];
}

// The steps walk both sequences in order, once each, and keep only equal items.
void expect_valid_script(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                         const std::vector<AlignedStep>& steps, size_t& same) {
  size_t i = 0, j = 0;
  same = 0;
  for (const AlignedStep& step : steps) {
    if (step.kind != AlignedKind::only_b) {
      ASSERT_EQ(step.a, i);
      ++i;
    }
    if (step.kind != AlignedKind::only_a) {
      ASSERT_EQ(step.b, j);
      ++j;
    }
    if (step.kind == AlignedKind::same) {
      ASSERT_EQ(a[step.a], b[step.b]);
      ++same;
    }
  }
  EXPECT_EQ(i, a.size());
  EXPECT_EQ(j, b.size());
}

TEST(TraceDiffAlignment, OptimalOnRandomSequences) {
  std::mt19937 random(7);
  for (int round = 0; round < 4000; ++round) {
    auto below = [&random](uint32_t bound) { return static_cast<uint32_t>(random() % bound); };
    const uint32_t alphabet = 1 + below(5);
    std::vector<uint32_t> a(below(30)), b(below(30));
    for (auto& item : a) item = below(alphabet);
    for (auto& item : b) item = below(alphabet);
    auto steps = align_sequences(a, b, 1000);
    ASSERT_TRUE(steps) << steps.error().message;
    size_t same = 0;
    expect_valid_script(a, b, *steps, same);
    ASSERT_EQ(same, lcs_length(a, b)) << "round " << round;
  }
}

TEST(TraceDiffAlignment, LongSequencesWithFewDifferences) {
  std::mt19937 random(11);
  std::vector<uint32_t> a(30000);
  for (auto& item : a) item = static_cast<uint32_t>(random() % 50);
  std::vector<uint32_t> b = a;
  b.erase(b.begin() + 1000, b.begin() + 1010);  // 10 only in A
  b.insert(b.begin() + 20000, {900, 901, 902});   // 3 only in B
  auto steps = align_sequences(a, b, 100);
  ASSERT_TRUE(steps) << steps.error().message;
  size_t same = 0;
  expect_valid_script(a, b, *steps, same);
  EXPECT_EQ(same, a.size() - 10);
}

TEST(TraceDiffAlignment, RefusesMoreEditsThanTheBound) {
  std::vector<uint32_t> a(100), b(100);
  for (uint32_t i = 0; i < 100; ++i) a[i] = i, b[i] = 1000 + i;
  auto refused = align_sequences(a, b, 199);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
  EXPECT_TRUE(align_sequences(a, b, 200));
}

}  // namespace
}  // namespace xref
