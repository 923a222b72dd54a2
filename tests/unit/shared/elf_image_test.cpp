#include "elf_image.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "command_output.h"

namespace xref {
namespace {

using test::command_lines;
using test::command_output;
using test::fixture_path;

// nm's view of the defined text symbols: address -> names at that address.
std::multimap<uint64_t, std::string> nm_functions(const std::string& path) {
  std::multimap<uint64_t, std::string> functions;
  for (const auto& line : command_lines("nm --defined-only " + path)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (!(fields >> address >> type >> name)) continue;
    // W and V may name data objects, so only text symbols count.
    if (type != "T" && type != "t" && type != "i") continue;
    functions.emplace(std::stoull(address, nullptr, 16), name);
  }
  return functions;
}

class ElfImageFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ElfImageFixture, EveryNmFunctionIsFoundAtItsAddress) {
  const std::string path = fixture_path(GetParam());
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  const auto expected = nm_functions(path);
  ASSERT_GT(expected.size(), 3u);
  for (const auto& [address, name] : expected) {
    const FunctionSymbol* function = image->function_at(address);
    ASSERT_NE(function, nullptr) << name << " at 0x" << std::hex << address;
    EXPECT_EQ(function->source, SymbolSource::symtab);
    // Aliases fold to one entry; the kept name must be one of nm's names there.
    bool listed = false;
    auto [begin, end] = expected.equal_range(address);
    for (auto it = begin; it != end; ++it) listed |= it->second == function->name;
    EXPECT_TRUE(listed) << function->name;
  }
  const auto leaf = image->find_functions("leaf_add");
  ASSERT_EQ(leaf.size(), 1u);
  EXPECT_EQ(image->function_containing(leaf[0]->start + 1), leaf[0]);
}

TEST_P(ElfImageFixture, BuildIdAndSegmentsMatchReadelf) {
  const std::string path = fixture_path(GetParam());
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  const std::string notes = command_output("readelf -n " + path);
  ASSERT_FALSE(image->build_id().empty());
  EXPECT_NE(notes.find("Build ID: " + image->build_id()), std::string::npos);

  // readelf -lW: "LOAD 0xOFFSET 0xVADDR 0xPADDR 0xFILESZ 0xMEMSZ FLAGS 0xALIGN"
  std::vector<LoadSegment> expected;
  for (const auto& line : command_lines("readelf -lW " + path)) {
    std::istringstream fields(line);
    std::string kind, offset, vaddr, paddr, filesz, memsz;
    if (!(fields >> kind) || kind != "LOAD") continue;
    fields >> offset >> vaddr >> paddr >> filesz >> memsz;
    expected.push_back(LoadSegment{std::stoull(vaddr, nullptr, 16), std::stoull(memsz, nullptr, 16),
                                   std::stoull(offset, nullptr, 16), std::stoull(filesz, nullptr, 16), 0, 0});
  }
  ASSERT_EQ(image->segments().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(image->segments()[i].vaddr, expected[i].vaddr);
    EXPECT_EQ(image->segments()[i].offset, expected[i].offset);
    EXPECT_EQ(image->segments()[i].filesz, expected[i].filesz);
    EXPECT_EQ(image->segments()[i].memsz, expected[i].memsz);
  }
  EXPECT_EQ(image->is_pie(), GetParam().find("nopie") == std::string::npos);
}

TEST_P(ElfImageFixture, StaticVaAndFileOffsetRoundTrip) {
  auto image = ElfImage::open(fixture_path(GetParam()));
  ASSERT_TRUE(image);
  const auto leaf = image->find_functions("leaf_add");
  ASSERT_EQ(leaf.size(), 1u);
  auto offset = image->file_offset_of(leaf[0]->start);
  ASSERT_TRUE(offset);
  const auto vas = image->vas_of_file_offset(*offset);
  ASSERT_EQ(vas.size(), 1u);
  EXPECT_EQ(vas[0], leaf[0]->start);
  auto bytes = image->bytes_at(leaf[0]->start, leaf[0]->size);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->data(), image->file_bytes().data() + *offset);
}

TEST_P(ElfImageFixture, PltStubsAreNamedFromRelocations) {
  auto image = ElfImage::open(fixture_path(GetParam()));
  ASSERT_TRUE(image);
  // calls.c prints with printf; objdump names that stub "printf@plt".
  const std::string disassembly = command_output("objdump -d " + fixture_path(GetParam()));
  const size_t at = disassembly.find("<printf@plt>:");
  ASSERT_NE(at, std::string::npos);
  const size_t line_start = disassembly.rfind('\n', at) + 1;
  const uint64_t stub = std::stoull(disassembly.substr(line_start, at - line_start), nullptr, 16);
  const FunctionSymbol* function = image->function_at(stub);
  ASSERT_NE(function, nullptr);
  EXPECT_EQ(function->name, "printf@plt");
  EXPECT_EQ(function->source, SymbolSource::plt);
}

INSTANTIATE_TEST_SUITE_P(Variants, ElfImageFixture, ::testing::Values("calls_pie", "calls_nopie"));

TEST(ElfImage, BadFilesAreErrorsNotCrashes) {
  auto missing = ElfImage::open("/nonexistent/file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
  auto not_elf = ElfImage::open("/etc/passwd");
  ASSERT_FALSE(not_elf);
  EXPECT_EQ(not_elf.error().code, ErrorCode::elf_error);
}

}  // namespace
}  // namespace xref
