// sequence_alignment (checked against a plain LCS table) and trace_diff on
// small hand-written windows: what is only in A, only in B, changed; the
// text and JSON views; bad input and build identity.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "trace/saved/diff.h"
#include "trace/saved/diff_output.h"
#include "trace/saved/file.h"
#include "trace/saved/sequence_alignment.h"

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

// --- diffs of hand-written windows ---------------------------------------

nlohmann::json fetch(const std::string& name, const std::string& value) {
  return {{"name", name}, {"type", "x64"}, {"value", value}};
}

nlohmann::json event(uint64_t seq, const std::string& kind, uint32_t depth, const std::string& va,
                     const std::string& symbol, nlohmann::json fetches = nlohmann::json::array()) {
  return {{"seq", seq}, {"kind", kind}, {"depth", depth}, {"target_va", va}, {"symbol", symbol},
          {"tail_call", false}, {"fetches", fetches}};
}

// f(id) calls g, then `branch`, which returns `ret`.
nlohmann::json window(uint64_t id, const std::string& request, const std::string& branch_va,
                      const std::string& branch, const std::string& ret) {
  nlohmann::json events = nlohmann::json::array({
      event(0, "entry", 0, "0x10", "f(req*)", {fetch("req", request)}),
      event(1, "entry", 1, "0x20", "g"),
      event(2, "return", 1, "0x20", "g"),
      event(3, "entry", 1, branch_va, branch),
      event(4, "return", 1, branch_va, branch, {fetch("ret", ret)}),
      event(5, "return", 0, "0x10", "f(req*)"),
  });
  return {{"window_id", id}, {"tid", 7}, {"status", "complete"}, {"events", events}};
}

WindowDiff diffed(const nlohmann::json& a, const nlohmann::json& b) {
  auto diff = diff_windows(a, b);
  EXPECT_TRUE(diff) << diff.error().message;
  return diff ? *diff : WindowDiff{};
}

TEST(TraceDiff, IdenticalWindowsAreEqual) {
  const WindowDiff diff = diffed(window(1, "0x4", "0x30", "h", "0x1"), window(2, "0x4", "0x30", "h", "0x1"));
  EXPECT_TRUE(diff.equal());
  EXPECT_EQ(diff.same, 6u);
  EXPECT_EQ(diff.steps.size(), 6u);
}

TEST(TraceDiff, AnotherBranchIsOnlyInAAndOnlyInB) {
  const WindowDiff diff = diffed(window(1, "0x4", "0x30", "h", "0x1"), window(1, "0x4", "0x40", "k", "0x1"));
  EXPECT_FALSE(diff.equal());
  EXPECT_EQ(diff.only_a, 2u);
  EXPECT_EQ(diff.only_b, 2u);
  EXPECT_EQ(diff.changed, 0u);
  std::vector<std::string> marked;
  for (const DiffStep& step : diff.steps) {
    if (step.mark == DiffMark::only_a) marked.push_back("-" + std::to_string(diff.a[*step.a].seq) + diff.a[*step.a].symbol);
    if (step.mark == DiffMark::only_b) marked.push_back("+" + std::to_string(diff.b[*step.b].seq) + diff.b[*step.b].symbol);
  }
  EXPECT_EQ(marked, (std::vector<std::string>{"-3h", "-4h", "+3k", "+4k"}));
}

TEST(TraceDiff, ValueChangesNameBothValues) {
  const WindowDiff diff = diffed(window(1, "0x4", "0x30", "h", "0x1"), window(1, "0x5", "0x30", "h", "0x2"));
  EXPECT_EQ(diff.changed, 2u);
  EXPECT_EQ(diff.only_a + diff.only_b, 0u);
  ASSERT_EQ(diff.steps[0].mark, DiffMark::changed);
  ASSERT_EQ(diff.steps[0].changes.size(), 1u);
  EXPECT_EQ(diff.steps[0].changes[0].name, "req");
  EXPECT_EQ(diff.steps[0].changes[0].a, "0x4");
  EXPECT_EQ(diff.steps[0].changes[0].b, "0x5");
  EXPECT_EQ(diff.steps[4].changes[0].name, "ret");
}

TEST(TraceDiff, DepthIsPartOfTheCall) {
  nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  nlohmann::json b = a;
  b["events"][1]["depth"] = 2;
  b["events"][2]["depth"] = 2;
  const WindowDiff diff = diffed(a, b);
  EXPECT_EQ(diff.only_a, 2u);
  EXPECT_EQ(diff.only_b, 2u);
}

TEST(TraceDiff, SignedMissingAndUnreadableValues) {
  nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  nlohmann::json b = a;
  a["events"][1]["fetches"] = {{{"name", "n"}, {"type", "s32"}, {"value", "0xfffffffe"}, {"signed_value", -2}}};
  b["events"][1]["fetches"] = {{{"name", "n"}, {"type", "s32"}, {"value", "0xfffffffd"}, {"signed_value", -3}}};
  b["events"][2]["fetches"] = {fetch("extra", "0x9")};
  b["events"][4]["fetches"] = {{{"name", "ret"}, {"type", "x64"}, {"value", nullptr}, {"error", "unreadable: EFAULT (-14)"}}};
  const WindowDiff diff = diffed(a, b);
  EXPECT_EQ(diff.changed, 3u);
  EXPECT_EQ(diff.steps[1].changes[0].a, -2);
  EXPECT_EQ(diff.steps[1].changes[0].b, -3);
  EXPECT_TRUE(diff.steps[2].changes[0].a.is_null());
  EXPECT_EQ(diff.steps[2].changes[0].b, "0x9");
  EXPECT_EQ(diff.steps[4].changes[0].b, "<unreadable: unreadable: EFAULT (-14)>");
}

// :string fetches compare as the text shows them: the cut and its bound
// count; a saved string past its bound is refused, not compared.
TEST(TraceDiff, StringValuesCompareAsShownAndAreBounded) {
  auto key = [](const std::string& string, bool truncated) {
    return nlohmann::json{{"name", "key"}, {"type", "string[8]"}, {"string", string}, {"length", string.size()},
                          {"truncated", truncated}};
  };
  nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  nlohmann::json b = a;
  a["events"][1]["fetches"] = {key("set", false)};
  b["events"][1]["fetches"] = {key("setex", false)};
  a["events"][2]["fetches"] = {key("settings", false)};
  b["events"][2]["fetches"] = {key("settings", true)};
  const WindowDiff diff = diffed(a, b);
  EXPECT_EQ(diff.changed, 2u);
  EXPECT_EQ(diff.steps[1].changes[0].a, "\"set\"");
  EXPECT_EQ(diff.steps[1].changes[0].b, "\"setex\"");
  EXPECT_EQ(diff.steps[2].changes[0].b, "\"settings\u2026\" (cut at 8 bytes)");
  b["events"][1]["fetches"] = {key(std::string(769, 'x'), true)};
  auto refused = diff_windows(a, b);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "B window 1: event 1 (seq 1): a fetched string is not a string of at most 256 characters");
}

TEST(TraceDiff, AnIndirectCallsLiveTargetIsNotAValue) {
  nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  nlohmann::json b = a;
  for (nlohmann::json* side : {&a, &b}) (*side)["events"][3]["indirect"] = true;
  a["events"][3]["fetches"] = {fetch("target", "0x5555aaaa0030")};
  b["events"][3]["fetches"] = {fetch("target", "0x7777bbbb0030")};
  EXPECT_TRUE(diffed(a, b).equal());
}

std::string text_of(const WindowDiff& diff, const nlohmann::json& a, const nlohmann::json& b, size_t context,
                    bool addresses = false) {
  DiffReport report{{"a.json", a, nullptr}, {"b.json", b, nullptr}, diff, {}};
  std::ostringstream out;
  print_diff(out, report, {context, addresses});
  return out.str();
}

TEST(TraceDiff, TextIsATreeWithMarks) {
  const nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  const nlohmann::json b = window(3, "0x5", "0x40", "k", "0x1");
  EXPECT_EQ(text_of(diffed(a, b), a, b, 10),
            "A  a.json  window 1  thread 7  complete  6 events\n"
            "B  b.json  window 3  thread 7  complete  6 events\n"
            "different: 2 only in A, 2 only in B, 1 changed, 3 same\n"
            "~   0  > f  req: 0x4 \u2192 0x5\n"
            "    1    > g\n"
            "    1    < g\n"
            "-   1    > h\n"
            "-   1    < h  ret=0x1\n"
            "+   1    > k\n"
            "+   1    < k  ret=0x1\n"
            "    0  < f\n");
}

TEST(TraceDiff, TextShowsStaticAddressesWhenAsked) {
  const nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  const nlohmann::json b = window(3, "0x5", "0x40", "k", "0x1");
  const std::string text = text_of(diffed(a, b), a, b, 10, true);
  EXPECT_NE(text.find("~   0  > f  [0x10]  req: 0x4 \u2192 0x5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("-   1    < h  [0x30]  ret=0x1\n"), std::string::npos) << text;
}

TEST(TraceDiff, TextCollapsesLongSameRunsButKeepsTheEnclosingCalls) {
  // f > g (x20: entry, return) > h differs at the end.
  auto long_window = [](const std::string& last_va) {
    nlohmann::json events = nlohmann::json::array({event(0, "entry", 0, "0x10", "f")});
    uint64_t seq = 1;
    events.push_back(event(seq++, "entry", 1, "0x50", "outer"));
    for (int i = 0; i < 20; ++i) {
      events.push_back(event(seq++, "entry", 2, "0x20", "g"));
      events.push_back(event(seq++, "return", 2, "0x20", "g"));
    }
    events.push_back(event(seq++, "entry", 2, last_va, "last"));
    events.push_back(event(seq++, "return", 2, last_va, "last"));
    events.push_back(event(seq++, "return", 1, "0x50", "outer"));
    events.push_back(event(seq++, "return", 0, "0x10", "f"));
    return nlohmann::json{{"window_id", 1}, {"tid", 7}, {"status", "complete"}, {"events", events}};
  };
  const nlohmann::json a = long_window("0x30");
  const nlohmann::json b = long_window("0x40");
  const std::string text = text_of(diffed(a, b), a, b, 1);
  EXPECT_NE(text.find("    0  > f\n"
                      "    1    > outer\n"
                      "    2      \u2026 39 same events\n"
                      "    2      < g\n"
                      "-   2      > last\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("+   2      < last\n"
                      "    1    < outer\n"
                      "    0  < f\n"),
            std::string::npos)
      << text;
}

TEST(TraceDiff, EqualTextSaysSo) {
  const nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  const std::string text = text_of(diffed(a, a), a, a, 2);
  EXPECT_NE(text.find("\nequal: 6 events, the same calls with the same values\n"), std::string::npos) << text;
}

TEST(TraceDiff, JsonListsTheDifferencesWithTheirSeqs) {
  const nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  const nlohmann::json b = window(3, "0x5", "0x40", "k", "0x1");
  DiffReport report{{"a.json", a, {{"build_id", "ab"}}}, {"b.json", b, {{"build_id", "ab"}}}, diffed(a, b), {}};
  const nlohmann::json json = diff_json(report);
  EXPECT_EQ(json["equal"], false);
  EXPECT_EQ(json["summary"], (nlohmann::json{{"only_in_a", 2}, {"only_in_b", 2}, {"changed", 1}, {"same", 3}}));
  EXPECT_EQ(json["a"]["window_id"], 1);
  EXPECT_EQ(json["b"]["window_id"], 3);
  EXPECT_EQ(json["a"]["build_id"], "ab");
  const nlohmann::json& differences = json["differences"];
  ASSERT_EQ(differences.size(), 5u);
  EXPECT_EQ(differences[0]["change"], "changed");
  EXPECT_EQ(differences[0]["seq_a"], 0);
  EXPECT_EQ(differences[0]["seq_b"], 0);
  EXPECT_EQ(differences[0]["values"], (nlohmann::json::array({{{"name", "req"}, {"a", "0x4"}, {"b", "0x5"}}})));
  EXPECT_EQ(differences[1]["change"], "only_in_a");
  EXPECT_EQ(differences[1]["seq_a"], 3);
  EXPECT_TRUE(differences[1]["seq_b"].is_null());
  EXPECT_EQ(differences[1]["kind"], "entry");
  EXPECT_EQ(differences[1]["target_va"], "0x30");
  EXPECT_EQ(differences[1]["symbol"], "h");
  EXPECT_EQ(differences[1]["depth"], 1);
  EXPECT_EQ(differences[4]["change"], "only_in_b");
  EXPECT_EQ(differences[4]["seq_b"], 4);
  EXPECT_EQ(differences[4]["kind"], "return");
  EXPECT_EQ(differences[4]["fetches"][0]["name"], "ret");
}

// --- bad input -------------------------------------------------------------

Error error_of(const std::string& text) {
  auto file = parse_trace_file(text);
  EXPECT_FALSE(file);
  return file ? Error{} : file.error();
}

TEST(TraceDiff, BadFilesAreRefused) {
  EXPECT_EQ(error_of("{\"operation\": \"live_maps\"}").message, "not an xref live_trace document");
  EXPECT_EQ(error_of("bash: xref: command not found\n").message, "not JSON");
  EXPECT_EQ(error_of(R"({"operation": "live_trace", "schema_version": 9, "windows": [{}]})").code,
            ErrorCode::invalid_argument);
  const std::string line = nlohmann::json{{"type", "window"}, {"window", window(1, "0x4", "0x30", "h", "0x1")}}.dump();
  EXPECT_EQ(error_of(line + "\n" + line.substr(0, line.size() / 2)).message, "truncated JSONL line 2");
}

TEST(TraceDiff, AMissingWindowIdIsNotFound) {
  auto file = parse_trace_file(nlohmann::json{{"type", "window"}, {"window", window(4, "0x4", "0x30", "h", "0x1")}}.dump());
  ASSERT_TRUE(file);
  EXPECT_NE(window_with_id(*file, 4), nullptr);
  EXPECT_EQ(window_with_id(*file, 5), nullptr);
}

TEST(TraceDiff, MalformedEventsNameTheEvent) {
  nlohmann::json a = window(1, "0x4", "0x30", "h", "0x1");
  nlohmann::json b = a;
  b["events"][2].erase("kind");
  auto diff = diff_windows(a, b);
  ASSERT_FALSE(diff);
  EXPECT_EQ(diff.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(diff.error().message.rfind("B window 1: event 2 (seq 2): no kind", 0), 0u) << diff.error().message;
  b = a;
  b["events"][3]["target_va"] = "0xzz";
  EXPECT_FALSE(diff_windows(a, b));
  EXPECT_FALSE(diff_windows(a, nlohmann::json{{"window_id", 1}}));
}

// A saved trace's process object, which decides its build.
nlohmann::json traced(const nlohmann::json& process) { return process; }

TEST(TraceDiff, BuildMismatchIsRefusedUnlessAllowed) {
  const nlohmann::json a = traced({{"build_id", "aaaa"}, {"exe_sha256", "11"}});
  const nlohmann::json b = traced({{"build_id", "bbbb"}, {"exe_sha256", "11"}});
  auto refused = check_same_build("a.json", a, "b.json", b, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(refused.error().message.find("build-id aaaa vs build-id bbbb"), std::string::npos);
  EXPECT_NE(refused.error().hint.find("--allow-build-mismatch"), std::string::npos);
  auto allowed = check_same_build("a.json", a, "b.json", b, true);
  ASSERT_TRUE(allowed);
  ASSERT_EQ(allowed->size(), 1u);
  EXPECT_NE((*allowed)[0].find("compared anyway"), std::string::npos);

  auto same = check_same_build("a.json", a, "c.json", traced({{"build_id", "aaaa"}, {"exe_sha256", "22"}}), false);
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->empty());
  // Without build-ids, the executable's SHA-256 decides.
  EXPECT_TRUE(check_same_build("a", traced({{"build_id", ""}, {"exe_sha256", "11"}}), "b",
                               traced({{"build_id", ""}, {"exe_sha256", "11"}}), false));
  EXPECT_FALSE(check_same_build("a", traced({{"build_id", ""}, {"exe_sha256", "11"}}), "b",
                                traced({{"build_id", ""}, {"exe_sha256", "22"}}), false));
}

TEST(TraceDiff, UnknownBuildIsRefusedUnlessAllowed) {
  const nlohmann::json a = traced({{"build_id", "aaaa"}});
  const nlohmann::json interrupted = traced(nullptr);  // a JSONL stream without header or summary
  auto refused = check_same_build("a.json", a, "b.jsonl", interrupted, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.rfind("b.jsonl does not say which build it traced", 0), 0u)
      << refused.error().message;
  auto allowed = check_same_build("a.json", a, "b.jsonl", interrupted, true);
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->size(), 1u);
}

}  // namespace
}  // namespace xref
