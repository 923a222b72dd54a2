// Whether a uprobe may go at a static VA (sites/probe_site_check.h), on the
// calls fixture, against objdump's instruction boundaries and prefixes and
// objdump -t's sections: never inside an instruction, never on an int3,
// never on an instruction the kernel refuses, never in data.
#include "sites/probe_site_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "hex.h"
#include "fixture_code.h"

namespace xref {
namespace {

using test::command_lines;

class ProbeSiteCheck : public ::testing::TestWithParam<std::string> {
 protected:
  const test::FixtureCode fixture_{GetParam()};
  const ElfImage& image_ = fixture_.image();
};

TEST_P(ProbeSiteCheck, EveryInstructionStartObjdumpPrintsIsASiteAndNoByteInsideOne) {
  for (const char* name : {"chain_b", "classify", "tree_root"}) {
    const FunctionCode code = fixture_.code_of(name);
    const auto lines = fixture_.listing().in_range(code.start, code.end);
    ASSERT_FALSE(lines.empty()) << name;
    for (const auto& line : lines) {
      EXPECT_TRUE(check_probe_site(image_, code, line.address, "probe")) << name << " " << to_hex(line.address);
      const uint64_t end = line.next != 0 && line.next <= code.end ? line.next : line.address + 1;
      for (uint64_t inside = line.address + 1; inside < end; ++inside) {
        auto refused = check_probe_site(image_, code, inside, "probe at " + to_hex(inside));
        ASSERT_FALSE(refused) << name << " " << to_hex(inside);
        EXPECT_EQ(refused.error().code, ErrorCode::not_an_instruction);
        EXPECT_EQ(refused.error().message.rfind("probe at " + to_hex(inside) + ": " + to_hex(inside) +
                                                    " is inside the ",
                                                0),
                  0u)
            << refused.error().message;
      }
    }
  }
}

// A breakpoint baked into the file: a copy of the fixture whose ret in
// leaf_add is int3 (both one byte, so the boundaries stay), at the file
// offset objdump -F prints.
TEST_P(ProbeSiteCheck, AnInt3InTheFileIsRefused) {
  const FunctionCode original = fixture_.code_of("leaf_add");
  ASSERT_EQ(original.rets.size(), 1u);
  const uint64_t ret = original.rets[0];
  ASSERT_TRUE(check_probe_site(image_, original, ret, "probe"));

  uint64_t function_offset = 0;
  for (const auto& line : command_lines("objdump -d -F --no-show-raw-insn " + fixture_.path())) {
    const std::string header = "<leaf_add> (File Offset: ";
    if (const size_t at = line.find(header); at != std::string::npos) {
      function_offset = std::stoull(line.substr(at + header.size()), nullptr, 16);
    }
  }
  ASSERT_NE(function_offset, 0u);
  const std::string patched = ::testing::TempDir() + "probe_site_int3_" + GetParam() + "_" + std::to_string(getpid());
  std::filesystem::copy_file(fixture_.path(), patched, std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream file(patched, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(function_offset + (ret - original.start)));
    file.put(static_cast<char>(0xcc));
  }
  bool objdump_sees_int3 = false;
  for (const auto& line : test::ObjdumpListing(patched).in_range(ret, ret + 1)) {
    objdump_sees_int3 = line.address == ret && line.mnemonic == "int3";
  }
  ASSERT_TRUE(objdump_sees_int3);

  auto image = ElfImage::open(patched);
  ASSERT_TRUE(image) << image.error().message;
  const FunctionCode code = fixture_.code_of(*image, "leaf_add");
  auto refused = check_probe_site(*image, code, ret, "probe at " + to_hex(ret));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(refused.error().message, "probe at " + to_hex(ret) + ": the byte at " + to_hex(ret) + " is already int3");
  EXPECT_TRUE(check_probe_site(*image, code, code.start, "probe"));
  std::filesystem::remove(patched);
}

// objdump prints the prefixes the kernel will not single-step (lock, a
// segment override, notrack) before the mnemonic: "data16 cs nopw ...".
TEST_P(ProbeSiteCheck, TheKernelRefusesExactlyTheLockAndSegmentPrefixedInstructions) {
  static const std::set<std::string> prefixes = {"bnd",  "notrack", "repz", "rep", "repnz", "repne", "data16",
                                                 "addr32", "cs",    "ds",   "es",  "ss",    "fs",    "gs",
                                                 "lock", "xacquire", "xrelease"};
  static const std::set<std::string> refused = {"lock", "cs", "ds", "es", "ss", "notrack"};
  size_t instructions = 0, refusals = 0;
  for (const auto& line : command_lines("objdump -d --no-show-raw-insn -j .text " + fixture_.path())) {
    const size_t colon = line.find(":\t");
    if (line.empty() || line[0] != ' ' || colon == std::string::npos) continue;
    const uint64_t address = std::stoull(line.substr(0, colon), nullptr, 16);
    std::istringstream words(line.substr(colon + 2));
    std::string word;
    bool expected = false;
    while (words >> word && (prefixes.count(word) || word.rfind("rex", 0) == 0)) expected |= refused.count(word) > 0;
    EXPECT_EQ(kernel_refuses_uprobe(image_, address), expected) << line;
    ++instructions;
    refusals += expected ? 1 : 0;
  }
  EXPECT_GT(instructions, 100u);
  EXPECT_GT(refusals, 0u);  // the fixture's "cs nopw" padding
}

TEST_P(ProbeSiteCheck, DataIsNamedByItsSection) {
  // objdump -t: "0000000000004030 g     O .data	0000000000000008              indirect_fp"
  std::map<std::string, std::pair<uint64_t, std::string>> objects;
  for (const auto& line : command_lines("objdump -t " + fixture_.path())) {
    std::istringstream fields(line);
    std::string address, scope, type, section, size, name;
    if (!(fields >> address >> scope >> type >> section >> size >> name) || type != "O") continue;
    objects[name] = {std::stoull(address, nullptr, 16), section};
  }
  for (const char* name : {"indirect_fp", "sink"}) {
    ASSERT_TRUE(objects.count(name)) << name;
    const auto& [va, section] = objects[name];
    auto data = data_not_code(image_, va, "--stop");
    ASSERT_TRUE(data) << name;
    EXPECT_EQ(data->code, ErrorCode::not_an_instruction);
    EXPECT_EQ(data->message, "--stop " + to_hex(va) + " is in " + section + ", not code");
  }
  EXPECT_FALSE(data_not_code(image_, fixture_.symbol("leaf_add").start, "--stop"));
}

INSTANTIATE_TEST_SUITE_P(Variants, ProbeSiteCheck, ::testing::Values("calls_pie", "calls_nopie"));

}  // namespace
}  // namespace xref
