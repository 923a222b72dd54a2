// profile diff over two hand-built captures of sample_service: matched by
// build-id and address when the build is the same, by name across builds
// only with --other, shares and changes exact.
#include <gtest/gtest.h>

#include "sample_profile.h"
#include "xprof/file.h"
#include "xprof/profile_diff.h"

namespace xref::test {
namespace {

Profile profile_of(XprofDocument& doc) {
  auto profile = profile_from_json(doc.json());
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  return profile.ok() ? *profile : Profile{};
}

struct Change {
  std::string name;
  double before;
  double after;
  std::string matched_by;
};

class SampleDiff : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string build_id = readelf_build_id(XREF_SAMPLE_SERVICE);
    fill_sample_profile(before_, XREF_SAMPLE_SERVICE, XREF_SAMPLE_SERVICE, build_id);
    fill_sample_profile(after_, XREF_SAMPLE_SERVICE, XREF_SAMPLE_SERVICE, build_id);
    // After: validate's stack 30 -> 90 samples (180 in all), the kernel's 20 -> 0 (removed below).
    after_.document.json()["samples"][2]["count"] = 90;
    after_.document.json()["samples"][3]["count"] = 0;
  }
  SampleProfile before_;
  SampleProfile after_;
};

TEST_F(SampleDiff, TheSameBuildMatchesByAddressAndSortsByChange) {
  auto diff = diff_profiles(profile_of(before_.document), profile_of(after_.document), {});
  ASSERT_TRUE(diff.ok()) << diff.error().message;
  EXPECT_FALSE(diff->across_builds);
  EXPECT_EQ(diff->before_samples, 120u);
  EXPECT_EQ(diff->after_samples, 160u);
  // apply_fee 70/120 -> 70/160, validate 30/120 -> 90/160, [kernel] 20/120 -> gone.
  const std::vector<Change> expected = {{"validate", 30.0 / 120, 90.0 / 160, "address"},
                                        {"[kernel]", 20.0 / 120, 0, "before_only"},
                                        {"apply_fee", 70.0 / 120, 70.0 / 160, "address"}};
  ASSERT_EQ(diff->rows.size(), expected.size());
  for (size_t index = 0; index < expected.size(); ++index) {
    EXPECT_EQ(diff->rows[index].name, expected[index].name);
    EXPECT_DOUBLE_EQ(diff->rows[index].before_share, expected[index].before);
    EXPECT_DOUBLE_EQ(diff->rows[index].after_share, expected[index].after);
    EXPECT_EQ(diff->rows[index].matched_by, expected[index].matched_by);
  }
  EXPECT_NEAR(diff->rows[0].change_points(), 31.25, 1e-9);
}

TEST_F(SampleDiff, MinDeltaLeavesOutSmallChangesAndCountsThem) {
  DiffOptions options;
  options.min_delta_points = 16.7;  // [kernel] changes by 16.67, apply_fee by 14.58
  auto diff = diff_profiles(profile_of(before_.document), profile_of(after_.document), options);
  ASSERT_TRUE(diff.ok()) << diff.error().message;
  ASSERT_EQ(diff->rows.size(), 1u);
  EXPECT_EQ(diff->rows[0].name, "validate");
  EXPECT_EQ(diff->filtered, 2u);
}

TEST_F(SampleDiff, AnotherBuildNeedsOtherAndThenMatchesByName) {
  // The second capture as if of another build whose functions moved.
  nlohmann::json& after = after_.document.json();
  after["modules"][0]["build_id"] = "feedface";
  after["process"]["build_id"] = "feedface";
  for (auto& function : after["functions"]) {
    function["start"] = xprof_hex(std::stoull(function["start"].get<std::string>(), nullptr, 16) + 0x100);
  }
  auto refused = diff_profiles(profile_of(before_.document), profile_of(after_.document), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::capture_mismatch);
  EXPECT_NE(refused.error().message.find("then feedface"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().hint.find("--other"), std::string::npos);

  DiffOptions wrong{"0badbuild", "./app-new", 0};
  auto not_it = diff_profiles(profile_of(before_.document), profile_of(after_.document), wrong);
  ASSERT_FALSE(not_it.ok());
  EXPECT_EQ(not_it.error().code, ErrorCode::capture_mismatch);

  DiffOptions other{"feedface", "./app-new", 0};
  auto diff = diff_profiles(profile_of(before_.document), profile_of(after_.document), other);
  ASSERT_TRUE(diff.ok()) << diff.error().message;
  EXPECT_TRUE(diff->across_builds);
  ASSERT_EQ(diff->rows.size(), 3u);
  EXPECT_EQ(diff->rows[0].name, "validate");
  EXPECT_EQ(diff->rows[0].matched_by, "name");
  EXPECT_EQ(diff->rows[2].name, "apply_fee");
  EXPECT_EQ(diff->rows[2].matched_by, "name");
}

TEST_F(SampleDiff, AnEmptyCaptureIsRefused) {
  for (auto& sample : after_.document.json()["samples"]) sample["count"] = 0;
  auto diff = diff_profiles(profile_of(before_.document), profile_of(after_.document), {});
  ASSERT_FALSE(diff.ok());
  EXPECT_EQ(diff.error().code, ErrorCode::empty_capture);
  EXPECT_NE(diff.error().message.find("the second capture"), std::string::npos);
}

}  // namespace
}  // namespace xref::test
