// Reading a .xprof back: what a good file gives, and each refusal with its
// status and where it points (docs/xprof.md, "Reading safely").
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "xprof/file.h"
#include "xprof/frames.h"
#include "xprof_document.h"

namespace xref::test {
namespace {

XprofDocument small_document() {
  XprofDocument doc;
  const uint32_t module = doc.module("/usr/bin/app", "abcd", true);
  const uint32_t function = doc.function(module, "busy", 0x1130, 0x40);
  const uint32_t leaf = doc.location(module, 0x1139, false, function);
  const uint32_t caller = doc.location(module, 0x1200, true, -1);
  doc.stack({leaf, caller}, 7, "complete", false, 11);
  doc.stack({leaf}, 3, "table_pending", true, 12);
  return doc;
}

Error refusal(const std::string& text, const std::string& name) {
  const std::string path = "/tmp/xref-xprof-refusal-" + name + "-" + std::to_string(getpid());
  std::ofstream(path) << text;
  auto read = read_xprof(path);
  std::remove(path.c_str());
  EXPECT_FALSE(read.ok()) << name;
  return read.ok() ? Error{} : read.error();
}

Error refusal(XprofDocument& doc, const std::string& name) { return refusal(doc.text(), name); }

TEST(XprofRead, AFileGivesEveryTableBack) {
  XprofDocument doc = small_document();
  doc.json()["losses"]["throttled"] = 2;
  doc.json()["warnings"].push_back("a warning");
  doc.json()["frames_walked"] = 17;
  auto profile = read_xprof(doc.write("good"));
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  ASSERT_EQ(profile->modules.size(), 1u);
  EXPECT_EQ(profile->modules[0].path, "/usr/bin/app");
  EXPECT_EQ(profile->modules[0].build_id, "abcd");
  EXPECT_EQ(profile->modules[0].load_bias, 0x555555554000u);
  ASSERT_EQ(profile->functions.size(), 1u);
  EXPECT_EQ(profile->functions[0].start, 0x1130u);
  EXPECT_EQ(profile->functions[0].size, 0x40u);
  ASSERT_EQ(profile->locations.size(), 2u);
  EXPECT_EQ(profile->locations[0].function, 0u);
  EXPECT_FALSE(profile->locations[1].function.has_value());
  EXPECT_TRUE(profile->locations[1].return_address);
  ASSERT_EQ(profile->stacks.size(), 2u);
  EXPECT_EQ(profile->stacks[0].locations, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(profile->stacks[1].end, StackEnd::table_pending);
  EXPECT_TRUE(profile->stacks[1].in_kernel);
  EXPECT_EQ(profile->total_samples(), 10u);
  ASSERT_EQ(profile->threads.size(), 2u);
  EXPECT_EQ(profile->threads[1].tid, 12u);
  EXPECT_EQ(profile->losses.throttled, 2u);
  EXPECT_EQ(profile->stack_ends.at("table_pending"), 3u);
  EXPECT_EQ(profile->frames_walked, 17u);
  EXPECT_EQ(profile->warnings, std::vector<std::string>{"a warning"});
  EXPECT_EQ(profile->capture.event, "cpu-clock");
  EXPECT_EQ(profile->capture.period_ns, 10101010u);
  EXPECT_FALSE(profile->complete());
}

TEST(XprofRead, AnotherSchemaVersionIsNamed) {
  XprofDocument doc = small_document();
  doc.json()["schema_version"] = 2;
  const Error error = refusal(doc, "version");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("schema_version 2 is not one this xref reads (it reads 1)"), std::string::npos)
      << error.message;
}

TEST(XprofRead, ACutFileSaysWhereItEnds) {
  const std::string text = small_document().text();
  const Error error = refusal(text.substr(0, text.size() / 2), "cut");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("is cut short: its JSON ends at byte " + std::to_string(text.size() / 2)),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(error.hint.empty());
  EXPECT_EQ(refusal("", "empty").code, ErrorCode::capture_format);
}

TEST(XprofRead, MalformedJsonSaysWhere) {
  const Error error = refusal("{\"format\": \"xprof\",, }", "malformed");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("is not JSON: a syntax error at byte 20"), std::string::npos) << error.message;
}

TEST(XprofRead, NotAnXprofDocument) {
  const Error error = refusal("{\"operation\": \"live_trace\"}", "other");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("not a .xprof capture"), std::string::npos) << error.message;
}

TEST(XprofRead, AnIndexOutOfRangeIsNamedWithItsTable) {
  XprofDocument doc = small_document();
  doc.json()["stacks"][1]["locations"][0] = 9;
  Error error = refusal(doc, "location-index");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("stacks[1].locations[0] = 9 is out of range (2 locations)"), std::string::npos)
      << error.message;

  XprofDocument samples = small_document();
  samples.json()["samples"][0]["stack"] = 2;
  error = refusal(samples, "stack-index");
  EXPECT_NE(error.message.find("samples[0].stack = 2 is out of range (2 stacks)"), std::string::npos) << error.message;

  XprofDocument functions = small_document();
  functions.json()["locations"][0]["function"] = 1;
  error = refusal(functions, "function-index");
  EXPECT_NE(error.message.find("locations[0].function = 1 is out of range (1 functions)"), std::string::npos)
      << error.message;

  XprofDocument modules = small_document();
  modules.json()["functions"][0]["module"] = 5;
  error = refusal(modules, "module-index");
  EXPECT_NE(error.message.find("functions[0].module = 5 is out of range (1 modules)"), std::string::npos)
      << error.message;
}

TEST(XprofRead, AMissingOrMistypedFieldIsNamed) {
  XprofDocument doc = small_document();
  doc.json()["modules"][0].erase("build_id");
  Error error = refusal(doc, "missing");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("modules[0].build_id is missing"), std::string::npos) << error.message;

  XprofDocument address = small_document();
  address.json()["locations"][1]["address"] = 4608;
  error = refusal(address, "address");
  EXPECT_NE(error.message.find("locations[1].address is not a hex address string"), std::string::npos)
      << error.message;

  XprofDocument end = small_document();
  end.json()["stacks"][0]["end"] = "lost";
  error = refusal(end, "end");
  EXPECT_NE(error.message.find("stacks[0].end \"lost\" is not a way a stack ends"), std::string::npos)
      << error.message;

  XprofDocument count = small_document();
  count.json()["samples"][1]["count"] = -3;
  error = refusal(count, "count");
  EXPECT_NE(error.message.find("samples[1].count is not a whole number"), std::string::npos) << error.message;

  XprofDocument no_losses = small_document();
  no_losses.json().erase("losses");
  error = refusal(no_losses, "losses");
  EXPECT_NE(error.message.find("the document.losses is missing"), std::string::npos) << error.message;
}

TEST(XprofRead, NestingIsBounded) {
  std::string deep = "{\"format\": \"xprof\", \"schema_version\": 1, \"process\": ";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}";
  const Error error = refusal(deep, "deep");
  EXPECT_EQ(error.code, ErrorCode::capture_format);
  EXPECT_NE(error.message.find("nested deeper than 256 levels"), std::string::npos) << error.message;
}

TEST(XprofRead, ALargerFileThanTheCapIsLimitExceeded) {
  XprofDocument doc = small_document();
  const std::string path = doc.write("cap");
  setenv("XREF_MAX_XPROF_BYTES", "100", 1);
  auto read = read_xprof(path);
  unsetenv("XREF_MAX_XPROF_BYTES");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::limit_exceeded);
  EXPECT_NE(read.error().message.find("larger than the cap of 100 bytes"), std::string::npos) << read.error().message;
  EXPECT_NE(read.error().hint.find("XREF_MAX_XPROF_BYTES"), std::string::npos);
  EXPECT_TRUE(read_xprof(path).ok());
}

TEST(XprofRead, OnlyRegularFilesAreRead) {
  auto directory = read_xprof("/tmp");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().code, ErrorCode::file_error);
  EXPECT_NE(directory.error().message.find("not a regular file"), std::string::npos) << directory.error().message;
  const std::string fifo = "/tmp/xref-xprof-fifo-" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto read = read_xprof(fifo);
  std::remove(fifo.c_str());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::file_error);
  auto missing = read_xprof("/nonexistent.xprof");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
}

}  // namespace
}  // namespace xref::test

namespace xref::test {
namespace {

TEST(XprofFrames, FramesWithoutASymbolAreNamedByModuleAndAddress) {
  XprofDocument doc = small_document();
  const uint32_t jit = doc.location(0, 0x7ffd5c1e2a10, false, -1);
  doc.json()["locations"][jit]["module"] = nullptr;
  doc.stack({jit}, 1);
  const uint32_t unnamed_leaf = doc.location(0, 0x1200, false, -1);
  doc.stack({unnamed_leaf}, 1);
  auto profile = profile_from_json(doc.json());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(frame_name(*profile, frame_key(*profile, 0)), "busy");
  // A caller frame by its call instruction (return address 0x1200 - 1), as
  // the pictures name it; a leaf by its own address.
  EXPECT_EQ(location_named_address(profile->locations[1]), 0x11ffu);
  EXPECT_EQ(frame_name(*profile, frame_key(*profile, 1)), "app+0x11ff");
  EXPECT_EQ(frame_name(*profile, frame_key(*profile, unnamed_leaf)), "app+0x1200");
  EXPECT_NE(frame_key(*profile, 1), frame_key(*profile, unnamed_leaf));
  EXPECT_EQ(frame_name(*profile, frame_key(*profile, jit)), "[unknown 0x7ffd5c1e2a10]");
  EXPECT_EQ(frame_module(*profile, frame_key(*profile, jit)), "");
  EXPECT_EQ(frame_name(*profile, kernel_frame()), "[kernel]");
  EXPECT_EQ(functions_named(*profile, "0x1131"), std::vector<uint32_t>{0});
  EXPECT_TRUE(functions_named(*profile, "0x1170").empty());
}

}  // namespace
}  // namespace xref::test

namespace xref::test {
namespace {

// The capture's writer (file_write.cpp) and this reader agree: a Profile
// written and read back is the same Profile, table for table.
TEST(XprofRoundTrip, WrittenAndReadBackIsTheSameProfile) {
  XprofDocument doc = small_document();
  doc.json()["losses"]["requests_lost"] = 4;
  doc.json()["modules"][0]["unwind_error"] = "no .eh_frame";
  doc.json()["modules"][0]["mappings"].push_back(
      {{"start", "0x555555555000"}, {"end", "0x555555556000"}, {"file_offset", "0x1000"}});
  doc.json()["capture"]["threads_requested"] = {11, 12};
  doc.json()["warnings"].push_back("something to say");
  auto first = profile_from_json(doc.json());
  ASSERT_TRUE(first.ok()) << first.error().message;
  const nlohmann::json written = xprof_json(*first);
  auto second = profile_from_json(written);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(xprof_json(*second), written);
  EXPECT_EQ(second->modules[0].unwind_error, "no .eh_frame");
  EXPECT_EQ(second->modules[0].mappings.size(), 1u);
  EXPECT_EQ(second->losses.requests_lost, 4u);

  const std::string path = "/tmp/xref-xprof-roundtrip-" + std::to_string(getpid()) + ".xprof";
  ASSERT_TRUE(write_xprof(*first, path).ok());
  auto read = read_xprof(path);
  std::remove(path.c_str());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(xprof_json(*read), written);
}

}  // namespace
}  // namespace xref::test
