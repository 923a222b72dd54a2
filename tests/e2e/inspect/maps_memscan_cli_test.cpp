// xref maps and xref memscan against the live sample service.
#include <gtest/gtest.h>

#include "run_xref.h"
#include "sample_target.h"

namespace xref::test {
namespace {

TEST(MapsCli, ModulesAndBiasMatchTheProcess) {
  SampleTarget target;
  const XrefRun run = run_xref({"maps", "--pid", target.pid(), "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["operation"], "live_maps");
  const std::string build_id = command_output("readelf -n " + std::string(XREF_SAMPLE_SERVICE));
  EXPECT_NE(build_id.find(document["process"]["build_id"].get<std::string>()), std::string::npos);

  bool found_main = false, found_libc = false;
  const uint64_t slide = target.process.value("func", "settle") - target.nm.at("settle");
  for (const auto& module : document["data"]["modules"]) {
    if (module["main_executable"] == true) {
      found_main = true;
      EXPECT_EQ(module["name"], "sample_service");
      EXPECT_EQ(module["load_bias"], hex(slide));
      EXPECT_EQ(module["pie"], true);
    }
    found_libc |= module["name"] == "libc.so.6";
  }
  EXPECT_TRUE(found_main);
  EXPECT_TRUE(found_libc);
  // Every line of /proc/PID/maps is there, in order.
  const auto maps = command_lines("cat /proc/" + target.pid() + "/maps");
  EXPECT_EQ(document["data"]["mappings"].size(), maps.size());

  const XrefRun text = run_xref({"maps", "--pid", target.pid()});
  ASSERT_EQ(text.exit_status, 0);
  EXPECT_NE(text.out.find("sample_service"), std::string::npos);
  EXPECT_NE(text.out.find("bias " + hex(slide) + "  [main]"), std::string::npos) << text.out;
}

TEST(MemscanCli, FindsDataAndClassifiesHeapContext) {
  SampleTarget target;
  const XrefRun marker = run_xref({"memscan", "--pid", target.pid(), "0x1122334455667788", "0x99aabbccddeeff00",
                                   "--json"});
  ASSERT_EQ(marker.exit_status, 0) << marker.err;
  const auto marker_json = marker.json();
  EXPECT_EQ(marker_json["operation"], "live_memscan");
  bool found = false;
  for (const auto& hit : marker_json["data"]["hits"]) found |= hit["address"] == hex(target.process.value("marker"));
  EXPECT_TRUE(found) << marker.out;

  const uint64_t block = target.process.value("heap_pattern");
  const XrefRun heap = run_xref({"memscan", "--pid", target.pid(), "0x5eed5eedc0ffee11", "--before-words", "1",
                                 "--after-words", "2", "--json"});
  ASSERT_EQ(heap.exit_status, 0) << heap.err;
  const auto heap_json = heap.json();
  const nlohmann::json* hit = nullptr;
  for (const auto& candidate : heap_json["data"]["hits"]) {
    if (candidate["address"] == hex(block)) hit = &candidate;
  }
  ASSERT_NE(hit, nullptr) << heap.out;
  const auto& context = (*hit)["context"];
  ASSERT_EQ(context.size(), 4u);  // 1 before + 1 matched + 2 after
  EXPECT_EQ(context[1]["in_match"], true);
  EXPECT_EQ(context[1]["value"], "0x5eed5eedc0ffee11");
  EXPECT_EQ(context[2]["classification"], "code_pointer");
  EXPECT_EQ(context[2]["value"], hex(target.process.value("func", "handle_request")));
  EXPECT_NE(context[2]["evidence"].get<std::string>().find("handle_request"), std::string::npos);
  EXPECT_EQ(context[3]["classification"], "heap_pointer");
}

TEST(MemscanCli, BoundsAreEnforced) {
  SampleTarget target;
  const XrefRun one_hit = run_xref({"memscan", "--pid", target.pid(), "0", "--max-hits", "1", "--json"});
  ASSERT_EQ(one_hit.exit_status, 0) << one_hit.err;
  const auto document = one_hit.json();
  EXPECT_EQ(document["data"]["hits"].size(), 1u);
  EXPECT_EQ(document["stops"][0], "max_hits");

  const XrefRun too_many = run_xref({"memscan", "--pid", target.pid(), "1", "--max-hits", "100000"});
  EXPECT_EQ(too_many.exit_status, 2);
  EXPECT_NE(too_many.err.find("--max-hits"), std::string::npos);
  const XrefRun wide = run_xref({"memscan", "--pid", target.pid(), "1", "--after-words", "65", "--json"});
  EXPECT_EQ(wide.exit_status, 2);
  EXPECT_EQ(wide.json()["error"]["code"], "invalid_argument");
  const XrefRun read_cap = run_xref({"memscan", "--pid", target.pid(), "0x77", "--max-read-bytes", "4096", "--json"});
  ASSERT_EQ(read_cap.exit_status, 0);
  EXPECT_EQ(read_cap.json()["stops"][0], "max_read_bytes");
}

}  // namespace
}  // namespace xref::test
