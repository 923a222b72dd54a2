// xref resolve against the live sample service: static VAs and symbols equal
// nm's, instruction boundaries are exact, bad input gets the documented error.
#include <gtest/gtest.h>

#include "run_xref.h"
#include "sample_target.h"

namespace xref::test {
namespace {

const char* const kFunctions[] = {"handle_request", "validate", "price_order", "apply_fee", "settle"};

// addr2line's "FILE:LINE" for a static VA, without a discriminator.
std::string addr2line(const std::string& path, uint64_t static_va) {
  std::string line = command_output("addr2line -e '" + path + "' " + hex(static_va));
  line = line.substr(0, line.find('\n'));
  return line.substr(0, line.find(" (discriminator"));
}

// Every instruction of `function` (objdump), as static VAs.
std::vector<uint64_t> instruction_starts(const std::string& path, const std::string& function) {
  std::vector<uint64_t> starts;
  for (const auto& line : command_lines("objdump -d --no-show-raw-insn --disassemble=" + function + " " + path)) {
    const size_t colon = line.find(':');
    if (line.size() > 2 && line[0] == ' ' && colon != std::string::npos) {
      starts.push_back(std::stoull(line.substr(0, colon), nullptr, 16));
    }
  }
  return starts;
}

TEST(ResolveCli, JsonStaticVaAndSymbolEqualNm) {
  SampleTarget target;
  std::vector<std::string> args = {"resolve", "--pid", target.pid(), "--json"};
  for (const char* name : kFunctions) args.push_back(hex(target.process.value("func", name)));
  const XrefRun run = run_xref(args);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  EXPECT_EQ(document["schema_version"], 1);
  EXPECT_EQ(document["tool"], "xref");
  EXPECT_EQ(document["operation"], "live_resolve");
  EXPECT_TRUE(document["error"].is_null());
  EXPECT_EQ(document["process"]["pid"], target.process.pid());
  EXPECT_EQ(document["process"]["binary_match"], "proc_exe_auto");
  const std::string sha = command_output("sha256sum " + std::string(XREF_SAMPLE_SERVICE)).substr(0, 64);
  EXPECT_EQ(document["process"]["exe_sha256"], sha);

  const auto& addresses = document["data"]["addresses"];
  ASSERT_EQ(addresses.size(), std::size(kFunctions));
  for (size_t i = 0; i < std::size(kFunctions); ++i) {
    const auto& candidate = addresses[i]["candidates"][0];
    EXPECT_EQ(addresses[i]["kind"], "file_backed");
    EXPECT_EQ(candidate["static_va"], hex(target.nm.at(kFunctions[i])));
    EXPECT_EQ(candidate["function"]["name"], kFunctions[i]);
    EXPECT_EQ(candidate["function"]["offset"], "0x0");
    EXPECT_EQ(candidate["instruction"]["is_start"], true);
    // 64-bit values travel as hex strings.
    EXPECT_TRUE(addresses[i]["live_va"].is_string());
  }
}

TEST(ResolveCli, TextNamesFunctionAndFlagsMidInstruction) {
  SampleTarget target;
  const uint64_t live = target.process.value("func", "price_order");
  // Find an instruction longer than one byte in price_order, from objdump.
  const auto listing = command_lines("objdump -d --no-show-raw-insn --disassemble=price_order " +
                                     std::string(XREF_SAMPLE_SERVICE));
  std::vector<uint64_t> starts;
  for (const auto& line : listing) {
    const size_t colon = line.find(':');
    if (line.size() > 2 && line[0] == ' ' && colon != std::string::npos) {
      starts.push_back(std::stoull(line.substr(0, colon), nullptr, 16));
    }
  }
  ASSERT_GE(starts.size(), 3u);
  size_t wide = 0;
  while (wide + 1 < starts.size() && starts[wide + 1] - starts[wide] < 2) ++wide;
  ASSERT_LT(wide + 1, starts.size());
  const uint64_t inside_static = starts[wide] + 1;
  const uint64_t inside_live = live + (inside_static - target.nm.at("price_order"));

  const XrefRun run = run_xref({"resolve", "--pid", target.pid(), hex(live), hex(inside_live)});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  // The line is DWARF's, as addr2line prints it.
  const std::string line = addr2line(XREF_SAMPLE_SERVICE, target.nm.at("price_order"));
  EXPECT_NE(run.out.find("static " + hex(target.nm.at("price_order")) + "  price_order at " + line +
                         "  [instruction start"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("MID-INSTRUCTION: inside the " + std::to_string(starts[wide + 1] - starts[wide]) +
                         "-byte instruction at " + hex(starts[wide])),
            std::string::npos)
      << run.out;

  const XrefRun json = run_xref({"resolve", "--pid", target.pid(), hex(inside_live), "--json"});
  const auto document = json.json();
  const auto& instruction = document["data"]["addresses"][0]["candidates"][0]["instruction"];
  EXPECT_EQ(instruction["is_start"], false);
  EXPECT_EQ(instruction["start"], hex(starts[wide]));
}

// The source object of each candidate is DWARF's line, equal to addr2line's
// on the same file, at every instruction of price_order and settle.
TEST(ResolveCli, SourceLinesEqualAddr2line) {
  SampleTarget target;
  const uint64_t slide = target.process.value("func", "price_order") - target.nm.at("price_order");
  std::vector<uint64_t> statics;
  for (const char* function : {"price_order", "settle"}) {
    for (uint64_t va : instruction_starts(XREF_SAMPLE_SERVICE, function)) statics.push_back(va);
  }
  ASSERT_GT(statics.size(), 20u);
  std::vector<std::string> args = {"resolve", "--pid", target.pid(), "--json"};
  for (uint64_t va : statics) args.push_back(hex(va + slide));
  const XrefRun run = run_xref(args);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto document = run.json();
  const auto& addresses = document["data"]["addresses"];
  ASSERT_EQ(addresses.size(), statics.size());
  for (size_t i = 0; i < statics.size(); ++i) {
    const auto& candidate = addresses[i]["candidates"][0];
    EXPECT_EQ(candidate["static_va"], hex(statics[i]));
    const std::string expected = addr2line(XREF_SAMPLE_SERVICE, statics[i]);
    const auto& source = candidate["source"];
    ASSERT_TRUE(source.is_object()) << hex(statics[i]) << " addr2line " << expected;
    EXPECT_EQ(source["file"].get<std::string>() + ":" + std::to_string(source["line"].get<int>()), expected)
        << hex(statics[i]);
    EXPECT_TRUE(source["column"].is_number());
  }
}

// A stripped copy of the service runs; its lines are found in the separate
// debug file its .gnu_debuglink names, beside it. Without that file the
// source is null and the answer is still complete.
TEST(ResolveCli, StrippedModuleReadsItsDebuglink) {
  const std::string directory = testing::TempDir() + "xref-resolve-lines-" + std::to_string(getpid());
  const std::string linked = directory + "/linked/sample_service";
  const std::string bare = directory + "/bare/sample_service";
  const std::string original = XREF_SAMPLE_SERVICE;
  command_output("mkdir -p " + directory + "/linked " + directory + "/bare && objcopy --only-keep-debug " + original +
                 " " + linked + ".debug && objcopy --strip-debug --add-gnu-debuglink=" + linked + ".debug " +
                 original + " " + linked + " && objcopy --strip-debug " + original + " " + bare);
  const auto nm = nm_static_vas(original);
  for (const std::string& path : {linked, bare}) {
    SCOPED_TRACE(path);
    TargetProcess process({path, "--threads", "1", "--requests", "0", "--interval-us", "2000"});
    const uint64_t live = process.value("func", "apply_fee");
    const XrefRun run = run_xref({"resolve", "--pid", std::to_string(process.pid()), hex(live), "--json"});
    ASSERT_EQ(run.exit_status, 0) << run.err;
    const auto document = run.json();
    const auto& candidate = document["data"]["addresses"][0]["candidates"][0];
    EXPECT_EQ(candidate["static_va"], hex(nm.at("apply_fee")));
    if (path == linked) {
      const auto& source = candidate["source"];
      ASSERT_TRUE(source.is_object()) << run.out;
      EXPECT_EQ(source["file"].get<std::string>() + ":" + std::to_string(source["line"].get<int>()),
                addr2line(original, nm.at("apply_fee")));
    } else {
      EXPECT_TRUE(candidate["source"].is_null()) << run.out;
    }
  }
  command_output("rm -rf " + directory);
}

TEST(ResolveCli, UnmappedAndAnonymousAddressesAreErrors) {
  SampleTarget target;
  const XrefRun unmapped = run_xref({"resolve", "--pid", target.pid(), "0x1000", "--json"});
  EXPECT_EQ(unmapped.exit_status, 8);
  const auto document = unmapped.json();
  EXPECT_EQ(document["error"]["code"], "address_unmapped");
  EXPECT_EQ(document["data"]["addresses"][0]["kind"], "unmapped");

  // The heap block lives in [heap]: anonymous memory, no module to name.
  const XrefRun heap = run_xref({"resolve", "--pid", target.pid(), hex(target.process.value("heap_pattern"))});
  EXPECT_EQ(heap.exit_status, 8);
  EXPECT_NE(heap.err.find("xref: error: not in any file-backed module"), std::string::npos) << heap.err;
  EXPECT_EQ(std::count(heap.err.begin(), heap.err.end(), '\n'), 1) << "one line: " << heap.err;
}

TEST(ResolveCli, BinMustBeTheSameBytes) {
  SampleTarget target;
  const std::string live = hex(target.process.value("func", "settle"));
  const std::string directory = testing::TempDir() + "/xref-bin-" + target.pid();
  command_output("mkdir -p " + directory + " && cp " + std::string(XREF_SAMPLE_SERVICE) + " " + directory +
                 "/copy && cp " + fixture_path("idle_pie") + " " + directory + "/sample_service");

  const XrefRun copy = run_xref({"resolve", "--pid", target.pid(), "--bin", directory + "/copy", live, "--json"});
  ASSERT_EQ(copy.exit_status, 0) << copy.out;
  EXPECT_EQ(copy.json()["process"]["binary_match"], "digest_match");

  // Same file name, different build: refused.
  const XrefRun impostor =
      run_xref({"resolve", "--pid", target.pid(), "--bin", directory + "/sample_service", live, "--json"});
  EXPECT_EQ(impostor.exit_status, 7);
  EXPECT_EQ(impostor.json()["error"]["code"], "binary_mismatch");

  // The predecessor's spelling still works.
  const XrefRun seed = run_xref({"-b", directory + "/copy", "live", "resolve", "--pid", target.pid(), live});
  EXPECT_EQ(seed.exit_status, 0) << seed.err;
  EXPECT_NE(seed.out.find("settle"), std::string::npos);
  command_output("rm -rf " + directory);
}

TEST(ResolveCli, BadNumbersAndPidsHaveDistinctExitStatuses) {
  const XrefRun bad_number = run_xref({"resolve", "--pid", "1", "0x12g4", "--json"});
  EXPECT_EQ(bad_number.exit_status, 2);
  const auto error = bad_number.json()["error"];
  EXPECT_EQ(error["code"], "invalid_argument");
  EXPECT_EQ(error["column"], 5);

  const XrefRun no_such = run_xref({"resolve", "--pid", "4194000", "0x1000", "--json"});
  EXPECT_EQ(no_such.exit_status, 3);
  EXPECT_EQ(no_such.json()["error"]["code"], "no_such_process");

  const XrefRun kernel_thread = run_xref({"resolve", "--pid", "2", "0x1000"});
  EXPECT_EQ(kernel_thread.exit_status, 6);
  EXPECT_NE(kernel_thread.err.find("kernel thread"), std::string::npos);

  const XrefRun unknown_flag = run_xref({"resolve", "--pid", "1", "--frobnicate", "0x1", "--json"});
  EXPECT_EQ(unknown_flag.exit_status, 2);
  EXPECT_EQ(unknown_flag.json()["error"]["code"], "invalid_argument");
}

}  // namespace
}  // namespace xref::test
