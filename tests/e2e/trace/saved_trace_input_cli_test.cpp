// trace show, diff and export take saved traces from anywhere: a directory,
// a device or a FIFO is refused before a byte is read (file_error, 11), a
// file over the size cap or nested too deep is a limit (limit_exceeded,
// 15; diff keeps diff(1)'s 2), and a JSON lines file, read back window by
// window, shows, exports and compares as the same trace saved as one
// document does.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sample_target.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

struct TempDirectory {
  TempDirectory() : path("/tmp/xref-saved-input-" + std::to_string(getpid())) {
    std::filesystem::create_directories(path);
  }
  ~TempDirectory() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary | std::ios::trunc) << text;
    return path + "/" + name;
  }
  const std::string path;
};

// Runs xref with NAME=VALUE in its environment.
XrefRun run_xref_with(const std::string& name, const std::string& value, const std::vector<std::string>& args) {
  setenv(name.c_str(), value.c_str(), 1);
  XrefRun run = run_xref(args);
  unsetenv(name.c_str());
  return run;
}

// A one-window document, `depth` arrays deep inside its events list.
std::string nested_trace(size_t depth) {
  return R"({"schema_version": 1, "operation": "live_trace", "windows": [{"window_id": 1, "events": )" +
         std::string(depth, '[') + std::string(depth, ']') + "}]}";
}

TEST(SavedTraceInputCli, DirectoriesDevicesAndFifosAreNotRegularFiles) {
  const TempDirectory directory;
  const std::string fifo = directory.path + "/trace.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& input : {std::string("/tmp"), std::string("/dev/zero"), fifo}) {
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"trace", "show", input}, {"trace", "export", input}}) {
      const XrefRun run = run_xref(command);
      EXPECT_EQ(run.exit_status, 11) << command[1] << " " << input << ": " << run.err;
      EXPECT_NE(run.err.find(input + " is not a regular file"), std::string::npos) << run.err;
      EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
    }
    const XrefRun json = run_xref({"trace", "show", input, "--json"});
    EXPECT_EQ(json.exit_status, 11);
    EXPECT_EQ(json.json()["error"]["code"], "file_error");
    const XrefRun diff = run_xref({"trace", "diff", input, input, "--json"});
    EXPECT_EQ(diff.exit_status, 2) << "diff(1)'s status for any error";
    EXPECT_EQ(diff.json()["error"]["code"], "file_error");
  }
}

TEST(SavedTraceInputCli, DeeplyNestedJsonIsALimit) {
  const TempDirectory directory;
  const std::string deep = directory.write("deep.json", nested_trace(300000));
  const std::string lines = directory.write(
      "deep.jsonl", R"({"type": "window", "window": {"window_id": 1, "events": []}})" "\n" + std::string(300000, '[') + "\n");
  for (const std::string& input : {deep, lines}) {
    const XrefRun show = run_xref({"trace", "show", input});
    EXPECT_EQ(show.exit_status, 15) << show.err;
    EXPECT_NE(show.err.find("is JSON nested deeper than 256 levels"), std::string::npos) << show.err;
    EXPECT_EQ(show.err.find('\n'), show.err.size() - 1) << "one line: " << show.err;
    const XrefRun json = run_xref({"trace", "show", input, "--json"});
    EXPECT_EQ(json.exit_status, 15);
    EXPECT_EQ(json.json()["error"]["code"], "limit_exceeded");
    EXPECT_EQ(json.json()["error"]["exit_status"], 15);
    EXPECT_EQ(run_xref({"trace", "export", input}).exit_status, 15);
    const XrefRun diff = run_xref({"trace", "diff", input, input, "--json"});
    EXPECT_EQ(diff.exit_status, 2);
    EXPECT_EQ(diff.json()["error"]["code"], "limit_exceeded");
  }
  // 256 levels is a trace show can read (its events are then malformed).
  const XrefRun shallow = run_xref({"trace", "show", directory.write("shallow.json", nested_trace(250))});
  EXPECT_EQ(shallow.exit_status, 2) << shallow.err;
}

TEST(SavedTraceInputCli, FilesOverTheCapAreRefusedWithTheCapNamed) {
  const TempDirectory directory;
  const std::string input = directory.write("big.json", nested_trace(1) + std::string(5000, ' '));
  const XrefRun refused = run_xref_with("XREF_MAX_TRACE_BYTES", "4096", {"trace", "show", input});
  EXPECT_EQ(refused.exit_status, 15) << refused.err;
  EXPECT_NE(refused.err.find(input + " is larger than the cap of 4096 bytes for saved traces"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("XREF_MAX_TRACE_BYTES"), std::string::npos) << refused.err;
  // Raised, the same file is read.
  const XrefRun raised = run_xref_with("XREF_MAX_TRACE_BYTES", "8192", {"trace", "show", input});
  EXPECT_EQ(raised.exit_status, 0) << raised.err;
  EXPECT_EQ(raised.out.rfind("window 1 ", 0), 0u) << raised.out;
  const XrefRun bad = run_xref_with("XREF_MAX_TRACE_BYTES", "a lot", {"trace", "export", input});
  EXPECT_EQ(bad.exit_status, 2);
  EXPECT_NE(bad.err.find("XREF_MAX_TRACE_BYTES=a lot is not a positive number"), std::string::npos) << bad.err;
}

// The windows of one live capture, saved as a document and as JSON lines:
// shown, exported and compared alike.
TEST(SavedTraceInputCli, JsonLinesReadWindowByWindowEqualTheDocument) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget target;
  const XrefRun trace = run_xref({"trace", "--pid", target.pid(), "--start", "handle_request", "--functions",
                                  "validate,price_order,apply_fee,route_even,route_odd,settle", "--fetch",
                                  "id=+0(%di):u64", "--max-windows", "6", "--duration-ms", "20000", "--json"});
  ASSERT_EQ(trace.exit_status, 0) << trace.err;
  const nlohmann::json document = trace.json();
  ASSERT_EQ(document["windows"].size(), 6u);
  std::string lines = nlohmann::json{{"type", "header"}, {"schema_version", 1}, {"operation", "live_trace"},
                                     {"process", document["process"]}}.dump() + "\n";
  for (const auto& window : document["windows"]) lines += nlohmann::json{{"type", "window"}, {"window", window}}.dump() + "\n";
  lines += nlohmann::json{{"type", "summary"}, {"process", document["process"]}, {"summary", document["summary"]}}.dump() + "\n";
  const TempDirectory directory;
  const std::string as_document = directory.write("capture.json", trace.out);
  const std::string as_lines = directory.write("capture.jsonl", lines);

  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--json"}, {"--window", document["windows"][3]["window_id"].dump()}}) {
    std::vector<std::string> show = {"trace", "show", as_document};
    show.insert(show.end(), extra.begin(), extra.end());
    const XrefRun from_document = run_xref(show);
    show[2] = as_lines;
    const XrefRun from_lines = run_xref(show);
    ASSERT_EQ(from_document.exit_status, 0) << from_document.err;
    ASSERT_EQ(from_lines.exit_status, 0) << from_lines.err;
    if (extra.empty() || extra[0] != "--json") {
      EXPECT_EQ(from_lines.out, from_document.out);
      continue;
    }
    nlohmann::json shown = from_lines.json();
    EXPECT_EQ(shown["data"]["windows"], document["windows"]);
    shown["data"]["file"] = as_document;
    EXPECT_EQ(shown, from_document.json());
  }
  const XrefRun export_document = run_xref({"trace", "export", as_document});
  const XrefRun export_lines = run_xref({"trace", "export", as_lines});
  ASSERT_EQ(export_lines.exit_status, 0) << export_lines.err;
  EXPECT_EQ(export_lines.out, export_document.out);
  EXPECT_FALSE(export_lines.json()["traceEvents"].empty());
  const XrefRun diff = run_xref({"trace", "diff", as_document, as_lines, "--window", document["windows"][5]["window_id"].dump()});
  EXPECT_EQ(diff.exit_status, 0) << diff.out << diff.err;
}

}  // namespace
}  // namespace xref::test
