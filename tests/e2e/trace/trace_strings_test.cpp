// :string fetches in trace windows against string_target, built by gcc and
// clang -O2, which records every key it passed to lookup_key and how often:
// the windows' strings, their cut at the bound, --start-filter's string
// comparisons (==, !=, prefix) and the saved file read back by trace show,
// diff and export must equal that record, with the BPF program and with
// tracefs' uprobe events alike.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "probe_harness.h"
#include "string_target.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

class TraceStrings : public StringTargetTest {
 protected:
  TraceStrings() : StringTargetTest("trace", 2) {}

  // Traces a fresh target with `args` until it exits; its whole output.
  XrefRun trace(std::vector<std::string> args, bool json = true) {
    std::vector<std::string> all = {"--duration-ms", "60000", "--backend", GetParam().backend};
    if (json) all.push_back("--json");
    all.insert(all.end(), args.begin(), args.end());
    return run_on_target("trace", all);
  }
  nlohmann::json trace_json(std::vector<std::string> args) { return json_of(trace(std::move(args))); }

  // Every window's start string -> windows, each window checked to be
  // one complete call of lookup_key with its string at entry.
  static std::map<std::string, uint64_t> window_keys(const nlohmann::json& document) {
    std::map<std::string, uint64_t> seen;
    for (const auto& window : document["windows"]) {
      EXPECT_EQ(window["status"], "complete") << window.dump();
      const auto& key = window["start_fetches"][0];
      EXPECT_EQ(key["name"], "key");
      EXPECT_EQ(key, window["events"][0]["fetches"][0]) << "the start entry carries the same fetch";
      ++seen[key["string"].get<std::string>()];
    }
    return seen;
  }

};

// One window per call of lookup_key: its key is the record's, cut at the
// bound and said so (a 100-byte key cut at 64; one of exactly 64 not cut).
TEST_P(TraceStrings, WindowStringsAreTheRecordsCutAtTheBound) {
  const auto document = trace_json({"--start", "lookup_key", "--fetch", "key=+0(%di):string,short=+0(%di):string[5]"});
  std::map<std::string, uint64_t> expected;
  for (const auto& [key, count] : keys_) expected[shown(key, 64)] += count;
  EXPECT_EQ(window_keys(document), expected);
  bool saw_cut = false;
  for (const auto& window : document["windows"]) {
    const auto& key = window["start_fetches"][0];
    const auto& cut = window["start_fetches"][1];
    EXPECT_EQ(key["type"], "string[64]");
    EXPECT_EQ(cut["type"], "string[5]");
    EXPECT_FALSE(key.contains("value")) << key.dump();
    const std::string string = key["string"].get<std::string>();
    const size_t length = key["length"].get<size_t>();
    const bool long_key = !string.empty() && string[0] == 'x';
    saw_cut |= long_key;
    EXPECT_EQ(key["truncated"], long_key) << key.dump();
    EXPECT_EQ(cut["truncated"], length > 5) << cut.dump();
    EXPECT_EQ(cut["length"], std::min<size_t>(length, 5)) << cut.dump();
    // Bytes written as U+FFFD make the JSON's string longer than the length.
    if (string.find('\xef') == std::string::npos) {
      EXPECT_EQ(length, string.size()) << key.dump();
      EXPECT_EQ(cut["string"], string.substr(0, 5)) << cut.dump();
    }
  }
  EXPECT_TRUE(saw_cut);
}

// --start-filter over a string: windows open only for the calls whose key
// passes, as many as the record has; prefix ("set*") and != too, and a
// 64-byte constant never equals the 100-byte key cut at 64.
TEST_P(TraceStrings, StartFilterOpensWindowsForTheRecordsKeys) {
  struct Filter {
    std::string text;
    std::function<bool(const std::string&)> keep;
  };
  const std::vector<Filter> filters = {
      {R"(key == "set")", [](const std::string& key) { return key == "set"; }},
      {R"(key == "set*")", [](const std::string& key) { return key.rfind("set", 0) == 0; }},
      {R"(key != "set" && key != "")", [](const std::string& key) { return key != "set" && !key.empty(); }},
      {"key == \"" + std::string(64, 'x') + "\"", [](const std::string&) { return false; }},
  };
  for (const Filter& filter : filters) {
    SCOPED_TRACE(filter.text);
    const auto document =
        trace_json({"--start", "lookup_key", "--fetch", "key=+0(%di):string", "--start-filter", filter.text});
    std::map<std::string, uint64_t> expected;
    for (const auto& [key, count] : keys_) {
      if (filter.keep(key)) expected[shown(key, 64)] += count;
    }
    EXPECT_EQ(document["windows"].size(), passed_where(filter.keep));
    EXPECT_EQ(window_keys(document), expected);
    EXPECT_EQ(document["summary"]["starts_filtered"].get<uint64_t>(),
              passed_where([&](const std::string& key) { return !filter.keep(key); }))
        << document["summary"].dump();
  }
}

// Strings at traced functions' entries (--fetch-at) inside handle_key's
// windows: lookup_key's key and a char array 8 bytes into handle_command's
// struct, cut at 16, both the record's; and the text, live and from the
// saved file (trace show), shows the strings as probe does.
TEST_P(TraceStrings, FetchAtAndTextShowTheStrings) {
  const XrefRun json_run = trace({"--start", "handle_key", "--functions", "lookup_key,handle_command", "--fetch-at",
                                  "lookup_key", "key=+0(%di):string", "--fetch-at", "handle_command",
                                  "name=+8(%di):string[16]"});
  const auto document = json_run.json();
  std::map<std::string, uint64_t> expected_keys, expected_names, keys, names;
  for (const auto& [key, count] : keys_) {
    expected_keys[shown(key, 64)] += count;
    expected_names[shown(key, 16)] += count;
  }
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window["status"], "complete") << window.dump();
    for (const auto& event : window["events"]) {
      if (event["kind"] != "entry" || event["depth"] != 1) continue;
      ASSERT_EQ(event["fetches"].size(), 1u) << event.dump();
      const auto& fetch = event["fetches"][0];
      if (event["symbol"] == "lookup_key") {
        ++keys[fetch["string"].get<std::string>()];
      } else {
        EXPECT_EQ(event["symbol"], "handle_command");
        ++names[fetch["string"].get<std::string>()];
        EXPECT_EQ(fetch["truncated"], fetch["length"] == 16)
            << fetch.dump();
      }
    }
  }
  EXPECT_EQ(keys, expected_keys);
  EXPECT_EQ(names, expected_names);

  const XrefRun text = trace({"--start", "lookup_key", "--fetch", "key=+0(%di):string"}, false);
  EXPECT_NE(text.out.find("key=\"set\""), std::string::npos) << text.out.substr(0, 3000);
  EXPECT_NE(text.out.find("key=\"say \\\"hi\\\"\""), std::string::npos) << text.out.substr(0, 3000);
  const std::string cut = "key=\"" + std::string(64, 'x') + "\u2026\" (cut at 64 bytes)";
  EXPECT_NE(text.out.find(cut), std::string::npos) << text.out.substr(0, 3000);

  // The saved JSON read back: the same strings in trace show's text.
  const std::string saved = record_.path + ".saved.json";
  {
    std::ofstream out(saved);
    out << json_run.out;
  }
  const XrefRun show = run_xref({"trace", "show", saved});
  EXPECT_EQ(show.exit_status, 0) << show.err;
  EXPECT_NE(show.out.find("name=\"setex\""), std::string::npos) << show.out.substr(0, 3000);
  EXPECT_NE(show.out.find("name=\"" + std::string(16, 'x') + "\u2026\" (cut at 16 bytes)"), std::string::npos)
      << show.out.substr(0, 3000);

  // trace diff of the first two windows (keys "set" and "setex"): the
  // changed values as the text shows them; trace export: the strings in the
  // calls' args.
  const XrefRun diff = run_xref({"trace", "diff", saved, saved, "--window", "1", "--window-b", "2"});
  EXPECT_EQ(diff.exit_status, 1) << diff.err << diff.out;
  EXPECT_NE(diff.out.find("key: \"set\" \u2192 \"setex\""), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("name: \"set\" \u2192 \"setex\""), std::string::npos) << diff.out;
  const XrefRun same = run_xref({"trace", "diff", saved, saved, "--window", "1", "--window-b", "3"});
  EXPECT_EQ(same.exit_status, 0) << same.err << same.out;
  const XrefRun exported = run_xref({"trace", "export", saved});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  std::map<std::string, uint64_t> exported_keys;
  const nlohmann::json timeline = nlohmann::json::parse(exported.out);
  for (const auto& event : timeline["traceEvents"]) {
    if (event["name"] == "lookup_key") ++exported_keys[event["args"]["key"].get<std::string>()];
  }
  EXPECT_EQ(exported_keys["\"set\""], keys_["set"]);
  EXPECT_EQ(exported_keys["\"" + std::string(64, 'x') + "\u2026\" (cut at 64 bytes)"], keys_[std::string(100, 'x')]);
  unlink(saved.c_str());
}

INSTANTIATE_TEST_SUITE_P(Compilers, TraceStrings, ::testing::ValuesIn(string_cases()), string_case_name);

}  // namespace
}  // namespace xref::test
