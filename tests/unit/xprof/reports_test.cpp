// The report computations over a hand-built capture of sample_service
// (sample_profile.h): every count and share exact; names from nm, lines
// from addr2line, blocks from objdump's branches.
#include <gtest/gtest.h>

#include <set>

#include "sample_profile.h"
#include "xprof/annotate.h"
#include "xprof/block_report.h"
#include "xprof/caller_report.h"
#include "xprof/file.h"
#include "xprof/function_report.h"
#include "xprof/line_report.h"

namespace xref::test {
namespace {

class SampleReports : public ::testing::Test {
 protected:
  void SetUp() override {
    fill_sample_profile(sample_, XREF_SAMPLE_SERVICE, XREF_SAMPLE_SERVICE, readelf_build_id(XREF_SAMPLE_SERVICE));
    auto profile = profile_from_json(sample_.document.json());
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    profile_ = std::move(*profile);
  }

  ProfileSelection select(const std::string& within = "") {
    auto selection = select_samples(profile_, within);
    EXPECT_TRUE(selection.ok()) << selection.error().message;
    return selection.ok() ? *selection : ProfileSelection{};
  }

  SampleProfile sample_;
  Profile profile_;
};

struct Row {
  std::string name;
  uint64_t self;
  uint64_t total;
  bool operator==(const Row&) const = default;
};

std::vector<Row> rows_of(const std::vector<FunctionRow>& rows) {
  std::vector<Row> plain;
  for (const FunctionRow& row : rows) plain.push_back({row.name, row.self, row.total});
  return plain;
}

TEST_F(SampleReports, SelectionCountsEverySampleIncompleteStacksAndKernelSamples) {
  const ProfileSelection selection = select();
  EXPECT_EQ(selection.profile_samples, 120u);
  EXPECT_EQ(selection.samples, 120u);
  EXPECT_EQ(selection.incomplete, 10u);
  EXPECT_EQ(selection.in_kernel, 20u);
  EXPECT_EQ(selection.incomplete_by_end, (std::map<std::string, uint64_t>{{"no_cfi", 5}, {"truncated", 5}}));
  EXPECT_DOUBLE_EQ(selection.share(30), 0.25);
}

TEST_F(SampleReports, FunctionsHaveSelfAndTotalWithRecursionCountedOncePerStack) {
  const std::vector<FunctionRow> rows = function_rows(profile_, select());
  const std::vector<Row> expected = {{"apply_fee", 70, 70},      {"validate", 30, 30},    {"[kernel]", 20, 20},
                                     {"handle_request", 0, 110}, {"worker_main", 0, 110}, {"price_order", 0, 65}};
  EXPECT_EQ(rows_of(rows), expected);
  EXPECT_EQ(rows[0].module, XREF_SAMPLE_SERVICE);
  EXPECT_EQ(rows[2].module, "[kernel]");
}

TEST_F(SampleReports, WithinKeepsOnlyTheStacksThroughTheFunction) {
  const ProfileSelection selection = select("price_order");
  EXPECT_EQ(selection.samples, 65u);
  EXPECT_EQ(selection.incomplete, 5u);
  EXPECT_EQ(selection.in_kernel, 0u);
  const std::vector<Row> expected = {{"apply_fee", 65, 65},      {"price_order", 0, 65},
                                     {"handle_request", 0, 60},  {"worker_main", 0, 60}};
  EXPECT_EQ(rows_of(function_rows(profile_, selection)), expected);
  // The same function by an address inside it.
  const uint64_t inside = sample_.nm.at("price_order").start + 4;
  EXPECT_EQ(select(xprof_hex(inside)).samples, 65u);
}

TEST_F(SampleReports, AnEmptyCaptureOrSelectionIsEmptyCapture) {
  auto unknown = select_samples(profile_, "main");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::empty_capture);
  EXPECT_NE(unknown.error().message.find("--within main"), std::string::npos) << unknown.error().message;
  XprofDocument empty;
  empty.module(XREF_SAMPLE_SERVICE, "ab");
  auto profile = profile_from_json(empty.json());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  auto selection = select_samples(*profile);
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.error().code, ErrorCode::empty_capture);
}

TEST_F(SampleReports, CallerPathsAreRootToLeafWithHowCutStacksEnded) {
  const std::vector<CallerPath> paths = caller_paths(profile_, select());
  ASSERT_EQ(paths.size(), 5u);
  using Names = std::vector<std::string>;
  EXPECT_EQ(paths[0].names, (Names{"worker_main", "handle_request", "price_order", "apply_fee"}));
  EXPECT_EQ(paths[0].samples, 60u);
  EXPECT_EQ(paths[0].end, "complete");
  EXPECT_EQ(paths[1].names, (Names{"worker_main", "handle_request", "validate"}));
  EXPECT_EQ(paths[1].samples, 30u);
  EXPECT_EQ(paths[2].names, (Names{"worker_main", "handle_request", "[kernel]"}));
  EXPECT_EQ(paths[2].samples, 20u);
  EXPECT_EQ(paths[3].names, (Names{"apply_fee"}));
  EXPECT_EQ(paths[3].end, "no_cfi");
  EXPECT_EQ(paths[4].names, (Names{"price_order", "apply_fee", "apply_fee"}));
  EXPECT_EQ(paths[4].end, "truncated");
  EXPECT_EQ(paths[4].samples, 5u);
}

// "sample_service.c:190" of a line row, to compare with addr2line.
std::string line_text(const LineRow& row) {
  return row.file.substr(row.file.rfind('/') + 1) + ":" + std::to_string(row.line);
}

TEST_F(SampleReports, LinesAreAddr2linesAndKernelSamplesAreApart) {
  ModuleFiles files(profile_);
  const LineReport report = line_report(profile_, select(), files);
  std::map<std::string, uint64_t> expected;
  expected[addr2line_text(sample_.path, sample_.leaf_a) + " apply_fee"] += 60;
  expected[addr2line_text(sample_.path, sample_.leaf_b) + " apply_fee"] += 10;
  expected[addr2line_text(sample_.path, sample_.leaf_validate) + " validate"] += 30;
  std::map<std::string, uint64_t> got;
  for (const LineRow& row : report.lines) got[line_text(row) + " " + row.function] += row.samples;
  EXPECT_EQ(got, expected);
  EXPECT_EQ(report.unresolved_samples, 20u);
  ASSERT_EQ(report.unresolved.size(), 1u);
  EXPECT_NE(report.unresolved[0].reason.find("kernel"), std::string::npos);
}

TEST_F(SampleReports, SamplesOfAnotherBuildOrAMissingFileAreUnresolvedWithWhy) {
  XprofDocument& doc = sample_.document;
  doc.json()["modules"][0]["build_id"] = "0123456789abcdef";
  auto other = profile_from_json(doc.json());
  ASSERT_TRUE(other.ok());
  ModuleFiles files(*other);
  const LineReport report = line_report(*other, *select_samples(*other), files);
  EXPECT_TRUE(report.lines.empty());
  EXPECT_EQ(report.unresolved_samples, 120u);
  ASSERT_EQ(report.unresolved.size(), 2u);
  EXPECT_NE(report.unresolved[0].reason.find("is not the capture's 0123456789abcdef"), std::string::npos)
      << report.unresolved[0].reason;
  EXPECT_EQ(report.unresolved[0].samples, 100u);

  doc.json()["modules"][0]["path"] = "/nonexistent/sample_service";
  auto missing = profile_from_json(doc.json());
  ASSERT_TRUE(missing.ok());
  ModuleFiles missing_files(*missing);
  const BlockReport blocks = block_report(*missing, *select_samples(*missing), missing_files);
  EXPECT_TRUE(blocks.blocks.empty());
  EXPECT_EQ(blocks.unresolved_samples, 120u);
  EXPECT_NE(blocks.unresolved[0].reason.find("/nonexistent/sample_service"), std::string::npos)
      << blocks.unresolved[0].reason;
}

// objdump's basic blocks of a function: leaders at the start, at direct
// jump targets inside it, after jumps, rets and traps.
std::pair<uint64_t, uint64_t> objdump_block(const std::string& path, const NmFunction& function, uint64_t address) {
  const ObjdumpListing listing(path);
  const auto code = listing.in_range(function.start, function.start + function.size);
  std::set<uint64_t> leaders{function.start};
  for (const auto& instruction : code) {
    const bool jump = instruction.is_jump() || instruction.is_conditional_jump();
    if ((jump || instruction.is_ret() || instruction.is_trap()) && instruction.next != 0) leaders.insert(instruction.next);
    if (jump && !instruction.indirect()) leaders.insert(instruction.direct_target());
  }
  leaders.insert(function.start + function.size);
  const auto after = leaders.upper_bound(address);
  return {*std::prev(after), *after};
}

TEST_F(SampleReports, BlocksAreObjdumpsBasicBlocks) {
  ModuleFiles files(profile_);
  const BlockReport report = block_report(profile_, select(), files);
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> expected;
  expected[objdump_block(sample_.path, sample_.nm.at("apply_fee"), sample_.leaf_a)] += 60;
  expected[objdump_block(sample_.path, sample_.nm.at("apply_fee"), sample_.leaf_b)] += 10;
  expected[objdump_block(sample_.path, sample_.nm.at("validate"), sample_.leaf_validate)] += 30;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> got;
  for (const BlockRow& row : report.blocks) got[{row.start, row.end}] += row.samples;
  EXPECT_EQ(got, expected);
  EXPECT_EQ(report.blocks[0].function, "apply_fee");
  EXPECT_EQ(report.unresolved_samples, 20u);
}

TEST_F(SampleReports, AnnotateCountsEachInstructionAsObjdumpListsThem) {
  ModuleFiles files(profile_);
  auto annotation = annotate_function(profile_, "apply_fee", files, {});
  ASSERT_TRUE(annotation.ok()) << annotation.error().message;
  const NmFunction fee = sample_.nm.at("apply_fee");
  const auto objdump = ObjdumpListing(sample_.path).in_range(fee.start, fee.start + fee.size);
  ASSERT_EQ(annotation->instructions.size(), objdump.size());
  for (size_t index = 0; index < objdump.size(); ++index) {
    EXPECT_EQ(annotation->instructions[index].address, objdump[index].address);
  }
  EXPECT_EQ(annotation->function_samples, 70u);
  EXPECT_EQ(annotation->profile_samples, 120u);
  EXPECT_EQ(annotation->share_base, 120u);
  uint64_t hottest = 0;
  for (const AnnotatedInstruction& row : annotation->instructions) {
    if (row.address == sample_.leaf_a) EXPECT_EQ(row.samples, 60u);
    else if (row.address == sample_.leaf_b) EXPECT_EQ(row.samples, 10u);
    else EXPECT_EQ(row.samples, 0u);
    if (row.hottest) hottest = row.address;
    ASSERT_TRUE(row.line.has_value());
    EXPECT_EQ(row.line->file.substr(row.line->file.rfind('/') + 1) + ":" + std::to_string(row.line->line),
              addr2line_text(sample_.path, row.address));
  }
  EXPECT_EQ(hottest, sample_.leaf_a);

  auto relative = annotate_function(profile_, xprof_hex(sample_.leaf_b), files, {true, 10});
  ASSERT_TRUE(relative.ok()) << relative.error().message;
  EXPECT_EQ(relative->share_base, 70u);
  ASSERT_EQ(relative->instructions.size(), 2u);
  EXPECT_EQ(relative->hidden_instructions, objdump.size() - 2);
}

TEST_F(SampleReports, AnnotateRefusesAFunctionWithoutItsOwnSamples) {
  ModuleFiles files(profile_);
  auto kernel_only = annotate_function(profile_, "handle_request", files, {});
  ASSERT_FALSE(kernel_only.ok());
  EXPECT_EQ(kernel_only.error().code, ErrorCode::empty_capture);
  auto unknown = annotate_function(profile_, "no_such_function", files, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace xref::test
