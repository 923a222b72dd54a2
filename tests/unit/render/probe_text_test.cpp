// Probe text from hand-written live_probe documents and drain changes: the
// noise of issue 24 item 7 is gone (no run of identical sample lines, no
// name printed twice, no empty callers heading), and callers, stacks and
// samples are named by the Names. A real probe's text is checked in
// tests/e2e/probe.
#include "render/probe_text.h"

#include <gtest/gtest.h>

#include <map>

namespace xref::render {
namespace {

class TableNames final : public Names {
 public:
  std::map<uint64_t, Place> by_live;
  std::map<uint64_t, Place> by_static;
  std::optional<Place> place(const CodeAddress& address) override {
    if (address.live) {
      if (auto found = by_live.find(*address.live); found != by_live.end()) return found->second;
    }
    if (address.static_va) {
      if (auto found = by_static.find(*address.static_va); found != by_static.end()) return found->second;
    }
    return std::nullopt;
  }
};

TableNames sample_names() {
  TableNames names;
  names.by_static[0x1cf0] = {"validate", 0, "/src/sample_service.c", 150};
  names.by_live[0x55f82d75eed4] = {"handle_request", 0x84, "/src/sample_service.c", 209};
  names.by_live[0x55f82d75ecdc] = {"price_order", 0x9c, "/src/sample_service.c", 163};
  return names;
}

nlohmann::json sample_without_values(uint64_t hit) {
  return {{"hit", hit}, {"tid", 3161}, {"fetches", nlohmann::json::array()}, {"call_site_live", "0x55f82d75eed4"},
          {"call_site_va", "0x1ed4"}, {"call_site_verified", true}, {"caller", "handle_request"},
          {"return_live", "0x55f82d75eed9"}};
}

nlohmann::json document_of(nlohmann::json address) {
  return {{"backend", "uprobe_multi"},
          {"process", {{"pid", 3158}, {"comm", "sample_service"}}},
          {"summary", {{"hits", 825}, {"passed", 825}, {"records", 8}, {"lost_events", 0}, {"complete", true},
                       {"duration_ms", 515}, {"stop_reason", "duration"}}},
          {"warnings", nlohmann::json::array()},
          {"addresses", nlohmann::json::array({std::move(address)})}};
}

TEST(ProbeText, NoRepeatedSamplesNoNameTwiceNoEmptyCallers) {
  nlohmann::json address = {{"address", "validate"}, {"function", "validate"}, {"location", "validate"},
                            {"module", "sample_service"}, {"static_va", "0x1cf0"}, {"hits", 825}, {"passed", 825},
                            {"threads", {{{"tid", 3161}, {"hits", 400}}, {{"tid", 3162}, {"hits", 425}}}},
                            {"rate_per_s", 1601.94}, {"released", nullptr},
                            {"callers", {{"method", "exact"}, {"sites", {{{"hits", 825},
                                                                           {"call_site_live", "0x55f82d75eed4"},
                                                                           {"call_site_va", "0x1ed4"},
                                                                           {"call_site_verified", true},
                                                                           {"caller", "handle_request"},
                                                                           {"caller_va", "0x1e50"}}}},
                                         {"not_counted", 0}, {"unread", 0}}}};
  address["samples"] = nlohmann::json::array();
  for (uint64_t hit = 1; hit <= 8; ++hit) address["samples"].push_back(sample_without_values(hit));
  TableNames names = sample_names();
  EXPECT_EQ(probe_lines(document_of(address), names, {}),
            (std::vector<std::string>{
                "probed sample_service (pid 3158) for 515 ms, backend uprobe_multi; stopped: --duration-ms reached",
                "  validate at sample_service.c:150  hits 825  passed 825  threads 2  rate 1601.9/s",
                "    callers (exact):",
                "      825  handle_request+0x84 at sample_service.c:209",
                "825 hits, 825 passed, 8 records, 0 lost: complete",
            }));

  // At 0 hits: no callers heading without callers.
  address["hits"] = 0;
  address["passed"] = 0;
  address["threads"] = nlohmann::json::array();
  address["rate_per_s"] = 0;
  address["callers"]["sites"] = nlohmann::json::array();
  address["samples"] = nlohmann::json::array();
  address["address"] = "0x1cf0";
  NoNames none;
  EXPECT_EQ(probe_lines(document_of(address), none, {})[1],
            "  0x1cf0  validate  hits 0  passed 0  threads 0  rate 0.0/s");
}

TEST(ProbeText, SamplesWithValuesGroupsHistogramStacksAndAStop) {
  nlohmann::json address = {
      {"address", "apply_fee"}, {"static_va", "0x1b90"}, {"location", "apply_fee"}, {"hits", 20}, {"passed", 12},
      {"threads", {{{"tid", 3161}, {"hits", 20}}}}, {"rate_per_s", 10.0},
      {"released", {{"at_ms", 120}, {"reason", "breakpoint 2"}}},
      {"groups", {{"by", "tid"}, {"keys", 1}, {"not_counted", 3}, {"unread", 0},
                  {"values", {{{"key", "0xc59"}, {"hits", 12}}}}}},
      {"hist", {{"name", "price"}, {"buckets", {{{"from", 1024}, {"to", 2047}, {"hits", 4}},
                                                {{"from", 2048}, {"to", 4095}, {"hits", 8}}}}}},
      {"stacks", {{"method", "frame_pointers"}, {"keys", 1}, {"unread", 0},
                  {"stacks", {{{"hits", 12},
                               {"frames", {{{"kind", "pc"}, {"live", "0x55f82d75eb90"}, {"function", "apply_fee"}},
                                           {{"kind", "return"}, {"live", "0x55f82d75ece1"},
                                            {"call_site_live", "0x55f82d75ecdc"}, {"function", "price_order+0x9c"}}}}}}}}},
      {"records_lost", 2}};
  address["samples"] = nlohmann::json::array();
  for (uint64_t hit = 1; hit <= 10; ++hit) {
    nlohmann::json sample = sample_without_values(hit);
    sample["call_site_live"] = "0x55f82d75ecdc";
    sample["fetches"] = {{{"name", "price"}, {"type", "u64"}, {"value", "0x" + std::to_string(hit) + "00"}}};
    address["samples"].push_back(sample);
  }
  nlohmann::json document = document_of(address);
  document["stop_when"] = {{"filter", "price > 1000"}, {"fired", true},
                           {"stop", {{"address", "apply_fee"}, {"tid", 3161}, {"hit", 7}, {"match", 2},
                                     {"fetches", {{{"name", "price"}, {"type", "u64"}, {"value", "0x700"}}}},
                                     {"signal_sent", true}, {"probe_va", "0x1b90"},
                                     {"call_site_live", "0x55f82d75ecdc"}}}};
  TableNames names = sample_names();
  ProbeStyle style;
  style.session = 2;
  style.state = "running";
  style.samples = 3;
  const std::vector<std::string> expected = {
      "xref: probe session 2 (running), 515 ms, backend uprobe_multi",
      "  apply_fee  hits 20  passed 12  threads 1  rate 10.0/s",
      "    not observed since 120 ms (breakpoint 2): counted up to then",
      "    by tid (1 key; 3 hits not counted: the group map of 65536 keys was full):",
      "      12  3161",
      "    hist price:",
      "      [1024, 2047]                       4 |@@@@@@@@@@@@@@@@@@@@                    |",
      "      [2048, 4095]                       8 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|",
      "    stacks (frame_pointers, 1 distinct stack, 0 unread):",
      "      12",
      "          apply_fee",
      "          price_order+0x9c at sample_service.c:163",
      "    sample hit 1  thread 3161  price=0x100  from price_order+0x9c at sample_service.c:163",
      "    sample hit 2  thread 3161  price=0x200  from price_order+0x9c at sample_service.c:163",
      "    sample hit 3  thread 3161  price=0x300  from price_order+0x9c at sample_service.c:163",
      "    ... 7 more samples (--json shows them all)",
      "    lost 2 samples (ring buffer full)",
      "xref: probe session 2 stopped thread 3161: hit 7 of apply_fee, the 2nd where --stop-when 'price > 1000' "
      "held: price=0x700",
      "xref: (a signal from the probe: the thread stopped just after the probed instruction)",
      "xref: called from price_order+0x9c at sample_service.c:163",
      "825 hits, 825 passed, 8 records, 0 lost: complete",
  };
  EXPECT_EQ(probe_lines(document, names, style), expected);
}

TEST(ProbeText, WhatChangedAtAStop) {
  const nlohmann::json changes = {
      {"elapsed_ms", 2500}, {"since_ms", 1000}, {"hits_added", 30}, {"lost_events", 0},
      {"addresses",
       {{{"address", "validate"}, {"static_va", "0x1cf0"}, {"hits", 40}, {"hits_added", 30}, {"passed", 40},
         {"threads", 2}, {"new_threads", {3162}},
         {"callers", {{"method", "exact"}, {"sites", {{{"hits", 40}, {"hits_added", 30}, {"new", true},
                                                       {"call_site_live", "0x55f82d75eed4"},
                                                       {"call_site_verified", true}}}}}},
         {"samples", {sample_without_values(11), sample_without_values(12)}}},
        {{"address", "0x1b90"}, {"static_va", "0x1b90"}, {"hits", 5}, {"hits_added", 0}, {"passed", 5}, {"threads", 1}}}}};
  TableNames names = sample_names();
  EXPECT_EQ(probe_change_lines(3, changes, names),
            (std::vector<std::string>{
                "xref: probe session 3 at 2.50 s (+1.50 s): 30 new hits, 0 lost",
                "  validate at sample_service.c:150  hits 40 (+30)  threads 2, new 3162",
                "    callers (exact):",
                "      +30  handle_request+0x84 at sample_service.c:209  (40 in all)  new",
                "  0x1b90  hits 5 (no new hits)  threads 1",
            }));
  const std::vector<CodeAddress> asked = probe_addresses(changes);
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0], (CodeAddress{"", 0x1cf0, std::nullopt}));
  EXPECT_EQ(asked[1], (CodeAddress{"", std::nullopt, 0x55f82d75eed4}));
  EXPECT_EQ(asked[2], (CodeAddress{"", 0x1b90, std::nullopt}));
}

// A debugger's names are shown as it spells them (GDB's and LLDB's C++
// names carry their parameter lists); the name the user typed is not
// repeated when the debugger's spelling is that name with its parameters.
TEST(ProbeText, ADebuggersSpellingsAreShownAsItSpellsThem) {
  const nlohmann::json changes = {
      {"elapsed_ms", 50}, {"since_ms", 0}, {"hits_added", 10}, {"lost_events", 0},
      {"addresses",
       {{{"address", "svc::validate"}, {"static_va", "0x3af0"}, {"live", "0x555555557af0"}, {"hits", 10},
         {"hits_added", 10}, {"passed", 10}, {"threads", 1},
         {"callers", {{"method", "exact"}, {"sites", {{{"hits", 10}, {"hits_added", 10}, {"new", false},
                                                       {"call_site_live", "0x555555557ce7"},
                                                       {"call_site_verified", true}}}}}}}}}};
  TableNames names;
  names.by_live[0x555555557af0] = {"svc::validate(unsigned long, unsigned long)", 0, "/src/trace_target.cpp", 240, true};
  names.by_live[0x555555557ce7] = {"svc::handle_request(svc::Request*)", 0x27, "/src/trace_target.cpp", 331, true};
  EXPECT_EQ(probe_change_lines(1, changes, names),
            (std::vector<std::string>{
                "xref: probe session 1 at 0.05 s (+0.05 s): 10 new hits, 0 lost",
                "  svc::validate at trace_target.cpp:240  hits 10 (+10)  threads 1",
                "    callers (exact):",
                "      +10  svc::handle_request(svc::Request*)+0x27 at trace_target.cpp:331  (10 in all)",
            }));
  // The helper's own names of the same addresses: short labels.
  for (auto& [live, place] : names.by_live) place.debugger = false;
  EXPECT_EQ(probe_change_lines(1, changes, names)[3],
            "      +10  svc::handle_request+0x27 at trace_target.cpp:331  (10 in all)");
}

}  // namespace
}  // namespace xref::render
