// :string fetches against string_target, built by gcc and clang -O2, which
// records every key it passed and how often: the strings fetched, their cut
// at the bound, the string filters (==, !=, prefix) and --group-by a string
// must equal that record, with the BPF program and with tracefs' uprobe
// events alike.
#include <gtest/gtest.h>

#include <fnmatch.h>

#include <fstream>
#include <set>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "command_output.h"
#include "probe_harness.h"
#include "string_target.h"
#include "tracefs_state.h"

namespace xref::test {
namespace {

class ProbeStrings : public StringTargetTest {
 protected:
  ProbeStrings() : StringTargetTest("probe", 3) {}

  // Probes lookup_key in a fresh target with `args` until it exits.
  nlohmann::json probe(std::vector<std::string> args) {
    std::vector<std::string> all = {"--json", "--duration-ms", "0", "--backend", GetParam().backend};
    all.insert(all.end(), args.begin(), args.end());
    return json_of(run_on_target("probe", all));
  }
};

// Every call's key, fetched at lookup_key's entry (the string %di points
// at): the samples are the record's keys, cut at the bound and said so.
TEST_P(ProbeStrings, FetchedStringsAreTheRecordsCutAtTheBound) {
  const auto document = probe({"lookup_key", "--fetch", "key=+0(%di):string,short=+0(%di):string[5]", "--first",
                               "1000"});
  const auto& address = address_of(document, "lookup_key");
  std::map<std::string, uint64_t> seen, expected;
  for (const auto& [key, count] : keys_) expected[shown(key, 64)] += count;
  for (const auto& sample : address["samples"]) {
    const auto& key = sample["fetches"][0];
    const auto& cut = sample["fetches"][1];
    EXPECT_EQ(key["type"], "string[64]");
    ++seen[key["string"].get<std::string>()];
    const size_t length = key["length"].get<size_t>();
    EXPECT_EQ(key["truncated"], length == 64 && key["string"].get<std::string>()[0] == 'x') << key.dump();
    EXPECT_EQ(cut["truncated"], length > 5) << cut.dump();
    EXPECT_EQ(cut["length"], std::min<size_t>(length, 5)) << cut.dump();
    if (key["string"].get<std::string>().find('\xef') == std::string::npos) {
      EXPECT_EQ(cut["string"], key["string"].get<std::string>().substr(0, 5)) << cut.dump();
    }
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(address["hits"].get<uint64_t>(), passed_where([](const std::string&) { return true; }));
}

// ==, != and a prefix: passed hits equal the record's calls with such keys;
// a 100-byte key cut at 64 equals no constant but matches a prefix.
TEST_P(ProbeStrings, FiltersCountTheRecordsKeys) {
  struct Filter {
    std::string text;
    std::function<bool(const std::string&)> keep;
  };
  const std::string x64(64, 'x');
  const std::vector<Filter> filters = {
      {R"(key == "set")", [](const std::string& key) { return key == "set"; }},
      {R"(key != "set")", [](const std::string& key) { return key != "set"; }},
      {R"(key == "set*")", [](const std::string& key) { return key.rfind("set", 0) == 0; }},
      {R"(key == "x*")", [](const std::string& key) { return key[0] == 'x'; }},
      {"key == \"" + x64 + "\"", [](const std::string&) { return false; }},
      {R"(key == "say \"hi\"" || key == "")", [](const std::string& key) { return key == "say \"hi\"" || key.empty(); }},
  };
  for (const Filter& filter : filters) {
    SCOPED_TRACE(filter.text);
    const auto document = probe({"lookup_key", "--fetch", "key=+0(%di):string", "--filter", filter.text});
    const auto& address = address_of(document, "lookup_key");
    EXPECT_EQ(address["passed"].get<uint64_t>(), passed_where(filter.keep));
    EXPECT_EQ(address["hits"].get<uint64_t>(), passed_where([](const std::string&) { return true; }));
  }
}

// --group-by a string (a char array 8 bytes into handle_command's struct):
// one group per key, its count the record's; the long keys cut at 16.
TEST_P(ProbeStrings, GroupsAreTheRecordsKeys) {
  const auto document = probe({"handle_command", "--fetch", "name=+8(%di):string[16]", "--group-by", "name"});
  const auto& groups = address_of(document, "handle_command")["groups"];
  std::map<std::string, uint64_t> expected, seen;
  for (const auto& [key, count] : keys_) expected[shown(key, 16)] += count;
  for (const auto& value : groups["values"]) {
    const std::string string = value["string"].get<std::string>();
    seen[string] += value["hits"].get<uint64_t>();
    EXPECT_EQ(value["truncated"], string.size() == 16) << value.dump();
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(groups["keys"], expected.size());
  EXPECT_EQ(groups["complete"], true);
  EXPECT_EQ(groups["not_counted"], 0);
}

// Globs: the count matched is the number of function addresses nm lists
// whose name fnmatch(3) accepts on the same binary; every match is probed
// and counted as its record says.
TEST_P(ProbeStrings, GlobCountsEqualNm) {
  for (const std::string pattern : {"*_*", "[lh]*", "lookup_ke?"}) {
    SCOPED_TRACE(pattern);
    const auto document = probe({pattern});
    std::set<std::string> addresses;
    std::istringstream nm(command_output("nm --defined-only " + binary()));
    std::string address, kind, name;
    while (nm >> address >> kind >> name) {
      if ((kind == "T" || kind == "t" || kind == "W") && name.find(".cold") == std::string::npos &&
          fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
        addresses.insert(address);
      }
    }
    ASSERT_EQ(document["globs"].size(), 1u) << document.dump();
    EXPECT_EQ(document["globs"][0]["pattern"], pattern);
    EXPECT_EQ(document["globs"][0]["matched"].get<size_t>(), addresses.size());
    EXPECT_EQ(document["addresses"].size(), addresses.size());
  }
  const XrefRun none = run_xref({"probe", "--pid", std::to_string(getpid()), "no_such_function_xyz*", "--duration-ms", "1"});
  EXPECT_EQ(none.exit_status, 2) << none.err;
  EXPECT_NE(none.err.find("no function of"), std::string::npos) << none.err;
}

INSTANTIATE_TEST_SUITE_P(Compilers, ProbeStrings, ::testing::ValuesIn(string_cases()), string_case_name);

}  // namespace
}  // namespace xref::test
