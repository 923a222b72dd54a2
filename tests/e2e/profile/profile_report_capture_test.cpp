// The reports over a real capture (`xref profile --pid`, real perf events
// and BPF) of capture_spin-gcc: every sample in the function report, the
// functions nm's, the call chains the target is built with, annotate's
// instructions objdump's with their lines addr2line's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "objdump_listing.h"
#include "require.h"
#include "run_xref.h"
#include "target_process.h"
#include "xprof_document.h"

namespace xref::test {
namespace {

TEST(ProfileReportCapture, ReportsOfARealCaptureAgreeWithNmObjdumpAndAddr2line) {
  XREF_REQUIRE(geteuid() == 0, "root, for perf events and BPF");
  const std::string target = std::string(XREF_TARGETS_DIR) + "/capture_spin-gcc";
  TargetProcess spin({target, "--workers", "1"});
  const std::string file = "/tmp/xref-profile-capture-" + std::to_string(getpid()) + ".xprof";
  const XrefRun capture = run_xref(
      {"profile", "--pid", std::to_string(spin.pid()), "--duration-ms", "3000", "--callers", "dwarf", "--out", file});
  ASSERT_EQ(capture.exit_status, 0) << capture.err << capture.out;

  const XrefRun report = run_xref({"profile", "report", file, "--top", "0", "--json"});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  const nlohmann::json data = report.json()["data"];
  uint64_t self = 0;
  for (const auto& row : data["rows"]) self += row["self_samples"].get<uint64_t>();
  EXPECT_EQ(self, data["summary"]["samples"].get<uint64_t>());
  EXPECT_GT(self, 100u);
  const auto nm = nm_sized_functions(target);
  bool leaf_seen = false;
  for (const auto& row : data["rows"]) {
    if (row["module"] != target || !row["symbol"].get<bool>()) continue;
    const std::string name = row["function"];
    ASSERT_TRUE(nm.count(name)) << name;
    EXPECT_EQ(row["address"], xprof_hex(nm.at(name).start)) << name;
    if (name == "spin_leaf_worker" || name == "spin_leaf_main") leaf_seen = true;
  }
  EXPECT_TRUE(leaf_seen) << report.out;

  const XrefRun callers = run_xref({"profile", "report", file, "--by", "caller", "--top", "0", "--json"});
  ASSERT_EQ(callers.exit_status, 0) << callers.err;
  bool chain_seen = false;
  const nlohmann::json paths = callers.json();  // kept: the rows are references into it
  for (const auto& row : paths["data"]["rows"]) {
    std::string path;
    for (const auto& frame : row["path"]) path += (path.empty() ? "" : " -> ") + frame.get<std::string>();
    if (path.find("spin_worker -> spin_middle_worker -> spin_leaf_worker") != std::string::npos) chain_seen = true;
  }
  EXPECT_TRUE(chain_seen) << callers.out;

  const XrefRun annotate = run_xref({"profile", "annotate", file, "spin_leaf_worker", "--json"});
  ASSERT_EQ(annotate.exit_status, 0) << annotate.err;
  const nlohmann::json listing = annotate.json()["data"]["instructions"];
  const NmFunction leaf = nm.at("spin_leaf_worker");
  const auto objdump = ObjdumpListing(target).in_range(leaf.start, leaf.start + leaf.size);
  ASSERT_EQ(listing.size(), objdump.size());
  int hottest = 0;
  for (size_t index = 0; index < objdump.size(); ++index) {
    EXPECT_EQ(listing[index]["address"], xprof_hex(objdump[index].address));
    const std::string source = listing[index]["file"];
    EXPECT_EQ(source.substr(source.rfind('/') + 1) + ":" + std::to_string(listing[index]["line"].get<int>()),
              addr2line_text(target, objdump[index].address));
    hottest += listing[index]["hottest"].get<bool>() ? 1 : 0;
  }
  EXPECT_GE(hottest, 1);

  // --source: each line's text, from the file DWARF names, above its first
  // instruction; compared with the file read here.
  const XrefRun with_source = run_xref({"profile", "annotate", file, "spin_leaf_worker", "--source", "--json"});
  ASSERT_EQ(with_source.exit_status, 0) << with_source.err;
  const nlohmann::json sourced = with_source.json()["data"];
  EXPECT_TRUE(sourced["unreadable_sources"].empty()) << sourced["unreadable_sources"];
  size_t texts = 0;
  std::string previous;
  for (const auto& row : sourced["instructions"]) {
    const std::string place =
        row["file"].is_null() ? "" : row["file"].get<std::string>() + ":" + std::to_string(row["line"].get<int>());
    const bool first_of_line = !place.empty() && place != previous;
    previous = place;
    EXPECT_EQ(row.contains("source_text"), first_of_line) << row;
    if (!first_of_line) continue;
    std::ifstream source_file(row["file"].get<std::string>());
    std::string text;
    for (int line = 0; line < row["line"].get<int>(); ++line) std::getline(source_file, text);
    EXPECT_EQ(row["source_text"], text) << place;
    ++texts;
  }
  EXPECT_GE(texts, 2u);
  const XrefRun text_source = run_xref({"profile", "annotate", file, "spin_leaf_worker", "--c"});
  ASSERT_EQ(text_source.exit_status, 0) << text_source.err;
  EXPECT_NE(text_source.out.find("capture_spin.c:"), std::string::npos) << text_source.out;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace xref::test
