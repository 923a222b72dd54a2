// Saved traces read back as input from anywhere: JSON lines streamed window
// by window, only regular files, a size cap, bounded nesting; and the
// streamed JSON envelope of trace show.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "output/report.h"
#include "trace/saved/document.h"
#include "trace/saved/file.h"

namespace xref {
namespace {

nlohmann::json window(uint64_t id) {
  return {{"window_id", id}, {"tid", 9}, {"status", "complete"}, {"events", nlohmann::json::array()}};
}

std::string jsonl(const std::vector<nlohmann::json>& windows) {
  std::string text = nlohmann::json{{"type", "header"}, {"schema_version", 1}, {"process", {{"pid", 4}}}}.dump() + "\n";
  for (const auto& each : windows) text += nlohmann::json{{"type", "window"}, {"window", each}}.dump() + "\n";
  return text + nlohmann::json{{"type", "summary"}, {"process", {{"pid", 5}}}, {"summary", {{"windows", 3}}}}.dump() +
         "\n";
}

nlohmann::json document(const std::vector<nlohmann::json>& windows) {
  return {{"schema_version", 1}, {"operation", "live_trace"}, {"process", {{"pid", 6}}}, {"windows", windows}};
}

class SavedTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xref-saved-trace-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv(kMaxTraceBytesVariable);
    std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(SavedTraceTest, JsonLinesAreReadBackWindowByWindow) {
  const std::string path = write("three.jsonl", "\n" + jsonl({window(1), window(2), window(7)}));
  auto trace = SavedTrace::open(path);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->window_count(), 3u);
  EXPECT_EQ(trace->window_ids(), (std::vector<std::optional<uint64_t>>{1, 2, 7}));
  EXPECT_EQ(trace->process()["pid"], 5);  // the summary's wins over the header's
  EXPECT_EQ(trace->summary()["windows"], 3);
  EXPECT_EQ(trace->find_window(7), 2u);
  EXPECT_EQ(trace->find_window(3), std::nullopt);
  auto third = trace->window(2);
  ASSERT_TRUE(third);
  EXPECT_EQ(*third, window(7));
  // The same windows as the whole file parsed in memory.
  auto whole = load_trace_file(path);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->windows, (std::vector<nlohmann::json>{window(1), window(2), window(7)}));
}

TEST_F(SavedTraceTest, DocumentsOnOneLineOrPrettyPrinted) {
  for (const std::string& text : {document({window(3), window(4)}).dump() + "\n", document({window(3), window(4)}).dump(2)}) {
    auto trace = SavedTrace::open(write("doc.json", text));
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->process()["pid"], 6);
    ASSERT_EQ(trace->window_count(), 2u);
    EXPECT_EQ(*trace->window(1), window(4));
  }
}

TEST_F(SavedTraceTest, EveryWindowIsCheckedWhenTheFileIsOpened) {
  const std::string path = write("checked.jsonl", jsonl({window(1), window(2)}));
  size_t seen = 0;
  auto refused = SavedTrace::open(path, [&](const nlohmann::json& each, size_t index) -> Result<void> {
    ++seen;
    if (index == 1) return make_error(ErrorCode::invalid_argument, "window " + each["window_id"].dump() + " is bad");
    return {};
  });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "window 2 is bad");
  EXPECT_EQ(seen, 2u);
}

// Devices never end, FIFOs block: neither is read, nor is a directory.
TEST_F(SavedTraceTest, OnlyRegularFilesAreRead) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {dir_.string(), "a directory"}, {"/dev/zero", "a character device"}, {fifo, "a FIFO"}};
  for (const auto& [path, kind] : refused) {
    auto trace = SavedTrace::open(path);
    ASSERT_FALSE(trace) << path;
    EXPECT_EQ(trace.error().code, ErrorCode::file_error) << path;
    EXPECT_EQ(trace.error().message, path + " is not a regular file (it is " + kind + ")");
    EXPECT_NE(trace.error().hint.find("xref trace --json"), std::string::npos);
  }
  auto missing = SavedTrace::open((dir_ / "absent.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
}

TEST_F(SavedTraceTest, FilesOverTheCapAreRefused) {
  const std::string text = jsonl({window(1)});
  const std::string path = write("big.jsonl", text);
  auto refused = SavedTrace::open(path, {}, text.size() - 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::limit_exceeded);
  EXPECT_EQ(refused.error().message,
            path + " is larger than the cap of " + std::to_string(text.size() - 1) + " bytes for saved traces");
  EXPECT_EQ(refused.error().hint, "set XREF_MAX_TRACE_BYTES=BYTES to raise the cap");
  EXPECT_TRUE(SavedTrace::open(path, {}, text.size()));

  setenv(kMaxTraceBytesVariable, "64", 1);
  EXPECT_EQ(*saved_trace_byte_cap(), 64u);
  EXPECT_EQ(SavedTrace::open(path).error().code, ErrorCode::limit_exceeded);
  setenv(kMaxTraceBytesVariable, "0x100000", 1);
  EXPECT_EQ(*saved_trace_byte_cap(), 0x100000u);
  EXPECT_TRUE(SavedTrace::open(path));
  for (const char* bad : {"lots", "0", "-1"}) {
    setenv(kMaxTraceBytesVariable, bad, 1);
    auto cap = saved_trace_byte_cap();
    ASSERT_FALSE(cap) << bad;
    EXPECT_EQ(cap.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(cap.error().message.find("XREF_MAX_TRACE_BYTES"), std::string::npos);
  }
  unsetenv(kMaxTraceBytesVariable);
  EXPECT_EQ(*saved_trace_byte_cap(), kDefaultMaxTraceBytes);
}

TEST_F(SavedTraceTest, DeeplyNestedJsonIsALimitNotACrash) {
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  const std::string line = R"({"type": "window", "window": {"window_id": 2, "events": )" + deep + "}}";
  auto in_a_line = SavedTrace::open(write("deep.jsonl", jsonl({window(1)}) + line + "\n"));
  ASSERT_FALSE(in_a_line);
  EXPECT_EQ(in_a_line.error().code, ErrorCode::limit_exceeded);
  EXPECT_EQ(in_a_line.error().message, "line 4 is JSON nested deeper than 256 levels");
  for (const std::string& text : {deep, R"({"operation": "live_trace",)" "\n" R"("windows": )" + deep + "}"}) {
    auto whole = SavedTrace::open(write("deep.json", text));
    ASSERT_FALSE(whole);
    EXPECT_EQ(whole.error().code, ErrorCode::limit_exceeded);
    EXPECT_NE(whole.error().message.find("nested deeper than 256 levels"), std::string::npos);
  }
}

TEST_F(SavedTraceTest, AFileChangedAfterItWasOpenedIsNoticed) {
  const std::string path = write("changing.jsonl", jsonl({window(1), window(2)}));
  auto trace = SavedTrace::open(path);
  ASSERT_TRUE(trace);
  write("changing.jsonl", std::string(4096, '\n'));
  auto window = trace->window(1);
  ASSERT_FALSE(window);
  EXPECT_EQ(window.error().code, ErrorCode::file_error);
  EXPECT_NE(window.error().message.find("changed"), std::string::npos);
}

// A document is walked, never held: members kept, each window built alone.
TEST(TraceDocument, WalksMembersAndBuildsOnlyTheWantedWindows) {
  nlohmann::json whole = document({window(1), window(2), window(3)});
  whole["summary"] = {{"windows", 3}};
  whole["bulk"] = nlohmann::json::array({1, 2, {{"deep", {1}}}});
  std::istringstream input(whole.dump(2));
  std::vector<std::pair<size_t, nlohmann::json>> taken;
  const DocumentWalk walk = walk_trace_document(
      input, [](size_t index) { return index != 1; },
      [&](size_t index, nlohmann::json&& built) {
        taken.emplace_back(index, std::move(built));
        return true;
      });
  EXPECT_TRUE(walk.complete);
  EXPECT_TRUE(walk.top_object);
  EXPECT_FALSE(walk.has_type);
  EXPECT_EQ(walk.windows, 3u);
  EXPECT_EQ(walk.members, (nlohmann::json{{"operation", "live_trace"}, {"schema_version", 1},
                                          {"process", {{"pid", 6}}}, {"summary", {{"windows", 3}}}}));
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0], std::make_pair(size_t{0}, window(1)));
  EXPECT_EQ(taken[1], std::make_pair(size_t{2}, window(3)));

  std::istringstream again(whole.dump());
  size_t seen = 0;
  const DocumentWalk stopped = walk_trace_document(again, [](size_t) { return true; }, [&](size_t, nlohmann::json&&) {
    return ++seen < 2;
  });
  EXPECT_TRUE(stopped.stopped);
  EXPECT_FALSE(stopped.complete);
  EXPECT_EQ(seen, 2u);

  std::istringstream line(R"({"type": "header", "schema_version": 1})" "\n" R"({"type": "window"})");
  const DocumentWalk lines = walk_trace_document(line, [](size_t) { return true; }, [](size_t, nlohmann::json&&) { return true; });
  EXPECT_FALSE(lines.complete);
  EXPECT_TRUE(lines.has_type);
  std::istringstream deep(R"({"windows": [{"events": )" + std::string(300, '[') + std::string(300, ']') + "}]}");
  EXPECT_TRUE(walk_trace_document(deep, [](size_t) { return false; }, [](size_t, nlohmann::json&&) { return true; })
                  .too_deep) << "skipped values count too";
}

TEST_F(SavedTraceTest, DocumentWindowsAreReadBackOneAtATime) {
  auto trace = SavedTrace::open(write("doc.json", document({window(1), window(2), window(3)}).dump()));
  ASSERT_TRUE(trace) << trace.error().message;
  std::vector<nlohmann::json> read;
  ASSERT_TRUE(trace->read_windows({0, 2}, [&](size_t, nlohmann::json&& each) -> Result<void> {
    read.push_back(std::move(each));
    return {};
  }));
  EXPECT_EQ(read, (std::vector<nlohmann::json>{window(1), window(3)}));
  EXPECT_EQ(*trace->window(1), window(2));
  // A visit's error ends the reading with it.
  size_t visits = 0;
  auto stopped = trace->read_windows(trace->every_window(), [&](size_t, nlohmann::json&&) -> Result<void> {
    ++visits;
    return make_error(ErrorCode::invalid_argument, "no");
  });
  EXPECT_FALSE(stopped);
  EXPECT_EQ(visits, 1u);
}

// report_json_streamed writes what report() would for the whole list.
TEST(ReportJsonStreamed, WritesTheEnvelopeReportWould) {
  Envelope envelope;
  envelope.operation = "trace_show";
  envelope.process = {{"pid", 3}};
  envelope.limits = {{"max_depth", 16}};
  envelope.data = {{"file", "t.json"}, {"tree", false}, {"zz_after", 1}};
  const std::vector<nlohmann::json> list = {window(1), window(2)};
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  const int status = report_json_streamed(envelope, "windows", [&](const EmitElement& emit) {
    for (const auto& each : list) emit(each);
    envelope.warnings.push_back("late warning");
  });
  std::cout.rdbuf(saved);
  EXPECT_EQ(status, 0);
  Envelope whole = envelope;
  whole.data["windows"] = list;
  EXPECT_EQ(captured.str(), envelope_json(whole).dump() + "\n");

  // An error found while streaming: what came before stays, with the error.
  std::ostringstream failed;
  saved = std::cout.rdbuf(failed.rdbuf());
  const int failed_status = report_json_streamed(envelope, "windows", [&](const EmitElement& emit) {
    emit(list[0]);
    envelope.error = make_error(ErrorCode::file_error, "gone");
  });
  std::cout.rdbuf(saved);
  EXPECT_EQ(failed_status, 11);
  const auto document = nlohmann::json::parse(failed.str());
  EXPECT_EQ(document["data"]["windows"].size(), 1u);
  EXPECT_EQ(document["error"]["code"], "file_error");
}

}  // namespace
}  // namespace xref
