// xref profile report|annotate|diff on hand-built captures of sample_service
// (sample_profile.h), run as users run them: names checked against nm,
// lines against addr2line, instructions against objdump, and every exit
// status of a refusal with its JSON error object.
#include <gtest/gtest.h>

#include "run_xref.h"
#include "sample_profile.h"

namespace xref::test {
namespace {

class ProfileOffline : public ::testing::Test {
 protected:
  void SetUp() override {
    build_id_ = readelf_build_id(XREF_SAMPLE_SERVICE);
    fill_sample_profile(sample_, XREF_SAMPLE_SERVICE, XREF_SAMPLE_SERVICE, build_id_);
    file_ = sample_.document.write("offline");
  }

  nlohmann::json json_of(const std::vector<std::string>& args, int status = 0) {
    const XrefRun run = run_xref(args);
    EXPECT_EQ(run.exit_status, status) << run.err << run.out;
    const nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded()) << run.out;
    return document;
  }

  std::string build_id_;
  SampleProfile sample_;
  std::string file_;
};

TEST_F(ProfileOffline, ByFunctionNamesNmsFunctionsWithSelfAndTotal) {
  const nlohmann::json document = json_of({"profile", "report", file_, "--by", "function", "--json"});
  EXPECT_EQ(document["operation"], "profile_report");
  EXPECT_EQ(document["error"], nullptr);
  EXPECT_EQ(document["process"]["pid"], 4242);
  const nlohmann::json& data = document["data"];
  EXPECT_EQ(data["summary"]["samples"], 120);
  EXPECT_EQ(data["summary"]["incomplete_samples"], 10);
  EXPECT_EQ(data["summary"]["kernel_samples"], 20);
  EXPECT_EQ(data["summary"]["complete"], false);
  ASSERT_EQ(data["rows"].size(), 6u);
  const nlohmann::json& top = data["rows"][0];
  EXPECT_EQ(top["function"], "apply_fee");
  EXPECT_EQ(top["self_samples"], 70);
  EXPECT_EQ(top["self_percent"], 58.33);
  EXPECT_EQ(top["total_samples"], 70);
  EXPECT_EQ(data["rows"][3]["function"], "handle_request");
  EXPECT_EQ(data["rows"][3]["total_samples"], 110);
  EXPECT_EQ(data["rows"][3]["total_percent"], 91.67);
  for (const auto& row : data["rows"]) {
    if (row["function"] == "[kernel]") continue;
    const std::string name = row["function"];
    ASSERT_TRUE(sample_.nm.count(name)) << name;
    EXPECT_EQ(row["address"], xprof_hex(sample_.nm.at(name).start)) << name;
    EXPECT_EQ(row["module"], XREF_SAMPLE_SERVICE);
  }

  const XrefRun text = run_xref({"profile", "report", file_, "--top", "2"});
  EXPECT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("  58.33%       70   58.33%       70  apply_fee  sample_service"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("... 4 more functions (20 samples, 16.67%) not shown; --top 0 shows all"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("10 samples (8.33%) in stacks that are not whole (no_cfi 5, truncated 5)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("# event cpu-clock (default: no hardware PMU) at 99 Hz"), std::string::npos) << text.out;
}

TEST_F(ProfileOffline, ByCallerAndWithin) {
  const nlohmann::json data =
      json_of({"profile", "report", file_, "--by", "caller", "--within", "price_order", "--json"})["data"];
  EXPECT_EQ(data["summary"]["selected_samples"], 65);
  ASSERT_EQ(data["rows"].size(), 2u);
  EXPECT_EQ(data["rows"][0]["path"],
            (nlohmann::json{"worker_main", "handle_request", "price_order", "apply_fee"}));
  EXPECT_EQ(data["rows"][0]["percent"], 92.31);
  EXPECT_EQ(data["rows"][1]["end"], "truncated");
  const XrefRun text = run_xref({"profile", "report", file_, "--by", "caller"});
  EXPECT_NE(text.out.find("[no_cfi] ... -> apply_fee"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("worker_main -> handle_request -> [kernel]"), std::string::npos) << text.out;
}

TEST_F(ProfileOffline, ByLineIsAddr2lines) {
  const nlohmann::json data = json_of({"profile", "report", file_, "--by", "line", "--json"})["data"];
  std::map<std::string, uint64_t> expected;
  expected[addr2line_text(XREF_SAMPLE_SERVICE, sample_.leaf_a)] += 60;
  expected[addr2line_text(XREF_SAMPLE_SERVICE, sample_.leaf_b)] += 10;
  expected[addr2line_text(XREF_SAMPLE_SERVICE, sample_.leaf_validate)] += 30;
  std::map<std::string, uint64_t> got;
  for (const auto& row : data["rows"]) {
    const std::string file = row["file"];
    got[file.substr(file.rfind('/') + 1) + ":" + std::to_string(row["line"].get<int>())] += row["samples"].get<uint64_t>();
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(data["unresolved_samples"], 20);
}

TEST_F(ProfileOffline, ByBlockAndAnotherBuildsSamplesApart) {
  const nlohmann::json data = json_of({"profile", "report", file_, "--by", "block", "--json"})["data"];
  ASSERT_FALSE(data["rows"].empty());
  EXPECT_EQ(data["rows"][0]["function"], "apply_fee");
  const uint64_t start = std::stoull(data["rows"][0]["start"].get<std::string>(), nullptr, 16);
  const uint64_t end = std::stoull(data["rows"][0]["end"].get<std::string>(), nullptr, 16);
  EXPECT_LE(start, sample_.leaf_a);
  EXPECT_GT(end, sample_.leaf_a);
  // --bin naming another build: its samples are unresolved, with why.
  const nlohmann::json other =
      json_of({"profile", "report", file_, "--by", "block", "--bin", XREF_TRACE_TARGET, "--json"})["data"];
  EXPECT_TRUE(other["rows"].empty());
  EXPECT_EQ(other["unresolved_samples"], 120);
  EXPECT_NE(other["unresolved"][0]["reason"].get<std::string>().find("is not the capture's " + build_id_),
            std::string::npos)
      << other["unresolved"];
}

TEST_F(ProfileOffline, AnnotateListsObjdumpsInstructionsWithSamplesAndLines) {
  const nlohmann::json data = json_of({"profile", "annotate", file_, "apply_fee", "--json"})["data"];
  const NmFunction fee = sample_.nm.at("apply_fee");
  const auto objdump = ObjdumpListing(XREF_SAMPLE_SERVICE).in_range(fee.start, fee.start + fee.size);
  ASSERT_EQ(data["instructions"].size(), objdump.size());
  for (size_t index = 0; index < objdump.size(); ++index) {
    const nlohmann::json& row = data["instructions"][index];
    EXPECT_EQ(row["address"], xprof_hex(objdump[index].address));
    const std::string file = row["file"];
    EXPECT_EQ(file.substr(file.rfind('/') + 1) + ":" + std::to_string(row["line"].get<int>()),
              addr2line_text(XREF_SAMPLE_SERVICE, objdump[index].address));
    EXPECT_EQ(row["hottest"], objdump[index].address == sample_.leaf_a);
  }
  EXPECT_EQ(data["samples"], 70);
  EXPECT_EQ(data["percent_of"], "capture");

  const nlohmann::json relative = json_of({"profile", "annotate", file_, xprof_hex(sample_.leaf_a), "--percent",
                                           "function", "--min-samples", "1", "--json"})["data"];
  ASSERT_EQ(relative["instructions"].size(), 2u);
  EXPECT_EQ(relative["instructions"][0]["percent"], 14.29);  // leaf_b comes first: 10 of 70
  EXPECT_EQ(relative["instructions"][1]["percent"], 85.71);

  const XrefRun text = run_xref({"profile", "annotate", file_, "apply_fee"});
  EXPECT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find(">   50.00%       60  " + xprof_hex(sample_.leaf_a)), std::string::npos) << text.out;
}

TEST_F(ProfileOffline, DiffShowsTheChangeAndNeedsOtherAcrossBuilds) {
  SampleProfile after;
  fill_sample_profile(after, XREF_SAMPLE_SERVICE, XREF_SAMPLE_SERVICE, build_id_);
  after.document.json()["samples"][2]["count"] = 90;
  const std::string after_file = after.document.write("after");
  const nlohmann::json data = json_of({"profile", "diff", file_, after_file, "--min-delta", "15%", "--json"})["data"];
  ASSERT_EQ(data["functions"].size(), 2u);
  EXPECT_EQ(data["functions"][0]["function"], "validate");
  EXPECT_EQ(data["functions"][0]["before_percent"], 25.0);
  EXPECT_EQ(data["functions"][0]["after_percent"], 50.0);
  EXPECT_EQ(data["functions"][0]["change_points"], 25.0);
  EXPECT_EQ(data["functions_not_shown"], 1);

  // The second capture as of another build: trace_target, a real file with its own build-id.
  SampleProfile rebuilt;
  fill_sample_profile(rebuilt, XREF_SAMPLE_SERVICE, XREF_TRACE_TARGET, readelf_build_id(XREF_TRACE_TARGET));
  const std::string rebuilt_file = rebuilt.document.write("rebuilt");
  const nlohmann::json refused = json_of({"profile", "diff", file_, rebuilt_file, "--json"}, 29);
  EXPECT_EQ(refused["error"]["code"], "capture_mismatch");
  EXPECT_NE(refused["error"]["hint"].get<std::string>().find("--other"), std::string::npos);
  const nlohmann::json wrong = json_of({"profile", "diff", file_, rebuilt_file, "--other", XREF_SAMPLE_SERVICE, "--json"}, 29);
  EXPECT_EQ(wrong["error"]["code"], "capture_mismatch");
  const nlohmann::json by_name =
      json_of({"profile", "diff", file_, rebuilt_file, "--other", XREF_TRACE_TARGET, "--json"})["data"];
  EXPECT_EQ(by_name["across_builds"], true);
  for (const auto& row : by_name["functions"]) {
    if (row["function"] != "[kernel]") {
      EXPECT_EQ(row["matched_by"], "name") << row;
    }
    EXPECT_EQ(row["change_points"], 0.0) << row;
  }
}

TEST_F(ProfileOffline, EveryRefusalHasItsExitStatus) {
  XprofDocument version;
  version.json()["schema_version"] = 7;
  const nlohmann::json bad = json_of({"profile", "report", version.write("v7"), "--json"}, 28);
  EXPECT_EQ(bad["error"]["code"], "capture_format");
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("schema_version 7"), std::string::npos);

  const XrefRun cut = run_xref({"profile", "report", "/dev/null"});
  EXPECT_EQ(cut.exit_status, 11) << cut.err;  // not a regular file
  const std::string text = sample_.document.text();
  const std::string half = "/tmp/xref-xprof-half-" + std::to_string(getpid());
  std::ofstream(half) << text.substr(0, text.size() - 10);
  const XrefRun truncated = run_xref({"profile", "report", half});
  std::remove(half.c_str());
  EXPECT_EQ(truncated.exit_status, 28);
  EXPECT_NE(truncated.err.find("is cut short"), std::string::npos) << truncated.err;
  EXPECT_EQ(std::count(truncated.err.begin(), truncated.err.end(), '\n'), 1) << truncated.err;

  XprofDocument empty;
  empty.module(XREF_SAMPLE_SERVICE, build_id_, true);
  EXPECT_EQ(json_of({"profile", "report", empty.write("empty"), "--json"}, 30)["error"]["code"], "empty_capture");
  EXPECT_EQ(json_of({"profile", "report", file_, "--within", "main", "--json"}, 30)["error"]["code"],
            "empty_capture");
  EXPECT_EQ(json_of({"profile", "annotate", file_, "handle_request", "--json"}, 30)["error"]["code"],
            "empty_capture");

  EXPECT_EQ(run_xref({"profile", "report", file_}, {"XREF_MAX_XPROF_BYTES=64"}).exit_status, 15);
  EXPECT_EQ(run_xref({"profile", "report", "/nonexistent.xprof"}).exit_status, 11);
  EXPECT_EQ(run_xref({"profile", "report", file_, "--by", "symbol"}).exit_status, 2);
  EXPECT_EQ(run_xref({"profile", "report", file_, "--top", "-1"}).exit_status, 2);
  EXPECT_EQ(run_xref({"profile", "annotate", file_, "no_such_function"}).exit_status, 2);
  EXPECT_EQ(run_xref({"profile", "annotate", file_, "apply_fee", "--percent", "thread"}).exit_status, 2);
  const nlohmann::json delta = json_of({"profile", "diff", file_, file_, "--min-delta", "half", "--json"}, 2);
  EXPECT_NE(delta["error"]["message"].get<std::string>().find("--min-delta 'half'"), std::string::npos);
  EXPECT_EQ(run_xref({"profile", "report", file_, "--format", "folded", "--json"}).exit_status, 2);
  // annotate of a capture whose executable is another build: the code read would not be the code sampled.
  EXPECT_EQ(json_of({"profile", "annotate", file_, "apply_fee", "--bin", XREF_TRACE_TARGET, "--json"}, 29)["error"]["code"],
            "capture_mismatch");
}

}  // namespace
}  // namespace xref::test
