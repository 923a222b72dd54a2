// probe_changes: what a front end prints at a stop, from two drain
// documents of one probe.
#include "probe/changes.h"

#include <gtest/gtest.h>

namespace xref::test {
namespace {

nlohmann::json document(uint64_t duration_ms, nlohmann::json address) {
  uint64_t hits = address.value("hits", uint64_t{0});
  return {{"operation", "live_probe"},
          {"summary", {{"duration_ms", duration_ms}, {"hits", hits}, {"lost_events", address.value("records_lost", uint64_t{0})}}},
          {"addresses", nlohmann::json::array({address})}};
}

nlohmann::json caller(const char* return_live, uint64_t hits) {
  return {{"return_live", return_live}, {"hits", hits}, {"call_site_va", "0x1100"}, {"call_site_verified", true}};
}

nlohmann::json address(uint64_t hits, nlohmann::json threads, nlohmann::json callers, nlohmann::json samples,
                       uint64_t lost = 0) {
  return {{"address", "validate"},  {"location", "validate"}, {"function", "validate"},
          {"module", "target"},     {"static_va", "0x1200"},  {"probe_va", "0x1204"},
          {"hits", hits},           {"passed", hits},         {"threads", threads},
          {"callers", {{"method", "exact"}, {"evidence", "observed"}, {"complete", true}, {"sites", callers}}},
          {"groups", {{"by", "d"}, {"keys", 2}, {"complete", true},
                      {"values", {{{"key", "0x1"}, {"hits", hits / 2}}, {{"key", "0x2"}, {"hits", hits - hits / 2}}}}}},
          {"samples", samples},     {"records_lost", lost}};
}

TEST(ProbeChanges, FirstStopShowsEverythingAsNew) {
  const auto now = document(500, address(10, {{{"tid", 7}, {"hits", 10}}}, {caller("0x5555", 10)},
                                         {{{"hit", 1}}, {{"hit", 2}}}));
  const auto changes = probe_changes(nullptr, now);
  EXPECT_EQ(changes["elapsed_ms"], 500);
  EXPECT_EQ(changes["since_ms"], 0);
  EXPECT_EQ(changes["hits_added"], 10);
  const auto& first = changes["addresses"][0];
  EXPECT_EQ(first["hits_added"], 10);
  EXPECT_EQ(first["new_threads"], nlohmann::json::array({7}));
  ASSERT_EQ(first["callers"]["sites"].size(), 1u);
  EXPECT_EQ(first["callers"]["sites"][0]["new"], true);
  EXPECT_EQ(first["callers"]["sites"][0]["hits_added"], 10);
  EXPECT_EQ(first["groups"]["values"].size(), 2u);
  EXPECT_EQ(first["samples"].size(), 2u);
}

TEST(ProbeChanges, LaterStopsShowOnlyWhatGrewOrArrived) {
  const auto before = document(500, address(10, {{{"tid", 7}, {"hits", 10}}}, {caller("0x5555", 10)},
                                            {{{"hit", 1}}, {{"hit", 2}}}));
  const auto now = document(900, address(13, {{{"tid", 7}, {"hits", 12}}, {{"tid", 9}, {"hits", 1}}},
                                         {caller("0x5555", 10), caller("0x6666", 3)},
                                         {{{"hit", 1}}, {{"hit", 2}}, {{"hit", 11}}}, 2));
  const auto changes = probe_changes(before, now);
  EXPECT_EQ(changes["since_ms"], 500);
  EXPECT_EQ(changes["hits_added"], 3);
  EXPECT_EQ(changes["lost_added"], 2);
  const auto& first = changes["addresses"][0];
  EXPECT_EQ(first["hits"], 13);
  EXPECT_EQ(first["hits_added"], 3);
  EXPECT_EQ(first["threads"], 2);
  EXPECT_EQ(first["new_threads"], nlohmann::json::array({9}));
  ASSERT_EQ(first["callers"]["sites"].size(), 1u) << "the caller that did not grow is left out";
  EXPECT_EQ(first["callers"]["sites"][0]["return_live"], "0x6666");
  EXPECT_EQ(first["callers"]["sites"][0]["new"], true);
  // 5 -> 6 and 5 -> 7: both keys grew, neither is new.
  ASSERT_EQ(first["groups"]["values"].size(), 2u);
  EXPECT_EQ(first["groups"]["values"][0]["new"], false);
  EXPECT_EQ(first["groups"]["values"][0]["hits_added"], 1);
  EXPECT_EQ(first["groups"]["values"][1]["hits_added"], 2);
  ASSERT_EQ(first["samples"].size(), 1u);
  EXPECT_EQ(first["samples"][0]["hit"], 11);
  EXPECT_EQ(first["records_lost_added"], 2);
}

TEST(ProbeChanges, NothingNewIsAnEmptyChange) {
  const auto same = document(500, address(4, {{{"tid", 7}, {"hits", 4}}}, {caller("0x5555", 4)}, {{{"hit", 1}}}));
  const auto changes = probe_changes(same, same);
  const auto& first = changes["addresses"][0];
  EXPECT_EQ(first["hits_added"], 0);
  EXPECT_TRUE(first["new_threads"].empty());
  EXPECT_TRUE(first["callers"]["sites"].empty());
  EXPECT_TRUE(first["groups"]["values"].empty());
  EXPECT_TRUE(first["samples"].empty());
}

}  // namespace
}  // namespace xref::test

namespace xref::test {
namespace {

// A group of strings is named by its string and whether it was cut: "set"
// grew, "get" is new, and "xxxx…" cut differs from a whole "xxxx".
TEST(ProbeChanges, StringGroupsGrowByTheirString) {
  auto groups = [](nlohmann::json values) {
    nlohmann::json address = {{"hits", 0}};
    address["groups"] = {{"by", "key"}, {"keys", values.size()}, {"complete", true}, {"values", values}};
    nlohmann::json document = {{"summary", {{"duration_ms", 1}, {"hits", 0}}}};
    document["addresses"] = nlohmann::json::array({address});
    return document;
  };
  auto value = [](const char* string, bool truncated, int hits) {
    return nlohmann::json{{"string", string}, {"length", 4}, {"truncated", truncated}, {"hits", hits}};
  };
  const auto before = groups({value("set", false, 2), value("xxxx", false, 1)});
  const auto now = groups({value("set", false, 5), value("get", false, 1), value("xxxx", false, 1),
                           value("xxxx", true, 3)});
  const nlohmann::json changes = probe_changes(before, now);
  const nlohmann::json& values = changes["addresses"][0]["groups"]["values"];
  ASSERT_EQ(values.size(), 3u) << values.dump();
  EXPECT_EQ(values[0]["string"], "set");
  EXPECT_EQ(values[0]["hits_added"], 3);
  EXPECT_EQ(values[0]["new"], false);
  EXPECT_EQ(values[1]["string"], "get");
  EXPECT_EQ(values[1]["new"], true);
  EXPECT_EQ(values[2]["truncated"], true);
  EXPECT_EQ(values[2]["new"], true);
}

}  // namespace
}  // namespace xref::test
