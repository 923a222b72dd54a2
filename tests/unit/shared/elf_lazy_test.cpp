// ElfImage answers from its lazy paths (the compact symbol table, FDEs found
// through .eh_frame_hdr one at a time, names demangled only when they can
// match) exactly what the whole tables say, on real binaries: the test
// fixtures (PIE, non-PIE, stripped, Rust), libc and libstdc++.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "command_output.h"
#include "demangle.h"
#include "eh_frame.h"
#include "eh_frame_hdr.h"
#include "elf_image.h"

namespace xref {
namespace {

using test::fixture_path;

std::string binary(const std::string& name) { return name.starts_with("/") ? name : fixture_path(name); }

class ElfLazy : public ::testing::TestWithParam<std::string> {};

// Every entry of .eh_frame_hdr names an FDE the full walk found, at the same
// start, and the table is sorted, as the lookups assume.
TEST_P(ElfLazy, EhFrameHdrAgreesWithTheWalk) {
  auto image = ElfImage::open(binary(GetParam()));
  ASSERT_TRUE(image) << image.error().message;
  const SectionInfo* hdr_section = image->section(".eh_frame_hdr");
  const SectionInfo* eh_frame = image->section(".eh_frame");
  ASSERT_NE(hdr_section, nullptr);
  ASSERT_NE(eh_frame, nullptr);
  auto hdr = EhFrameHdr::read(image->section_bytes(*hdr_section), hdr_section->addr);
  ASSERT_TRUE(hdr) << hdr.error().message;
  EXPECT_EQ(hdr->eh_frame_va(), eh_frame->addr);
  const EhFrame* walked = image->eh_frame();
  ASSERT_NE(walked, nullptr) << image->fde_error();
  ASSERT_EQ(hdr->size(), walked->fdes.size());
  for (size_t i = 0; i < hdr->size(); ++i) {
    if (i > 0) {
      ASSERT_LE(hdr->start(i - 1), hdr->start(i)) << "entry " << i;
    }
    auto record = read_fde_at(image->section_bytes(*eh_frame), eh_frame->addr, hdr->fde_va(i) - eh_frame->addr);
    ASSERT_TRUE(record) << record.error().message;
    EXPECT_EQ(record->fde.range.start, hdr->start(i)) << "entry " << i;
    EXPECT_EQ(record->fde.range.start, walked->fdes[i].range.start) << "entry " << i;
    EXPECT_EQ(record->cie.offset, walked->cies[walked->fdes[i].cie_index].offset);
  }
}

// One image asked only through lookups, another listing everything: the same
// function at every start, inside every function, and the same next start.
TEST_P(ElfLazy, LookupsEqualTheWholeTable) {
  auto listed = ElfImage::open(binary(GetParam()));
  auto looked_up = ElfImage::open(binary(GetParam()));
  ASSERT_TRUE(listed && looked_up);
  const std::vector<const FunctionSymbol*> all = listed->all_functions();
  ASSERT_FALSE(all.empty());
  size_t fde_ranges = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const FunctionSymbol& expected = *all[i];
    fde_ranges += expected.is_fde_range() ? 1 : 0;
    const FunctionSymbol* at = looked_up->function_at(expected.start);
    ASSERT_NE(at, nullptr) << expected.name;
    EXPECT_EQ(at->name, expected.name);
    EXPECT_EQ(at->size, expected.size) << expected.name;
    EXPECT_EQ(at->source, expected.source) << expected.name;
    EXPECT_EQ(at->aliases, expected.aliases) << expected.name;
    if (expected.size > 1) {
      const FunctionSymbol* inside = looked_up->function_containing(expected.start + expected.size - 1);
      ASSERT_NE(inside, nullptr) << expected.name;
      EXPECT_TRUE(inside->contains(expected.start + expected.size - 1)) << expected.name;
    }
    const auto next = looked_up->next_function_start(expected.start);
    if (i + 1 < all.size()) {
      EXPECT_EQ(next, all[i + 1]->start) << "after " << expected.name;
    } else {
      EXPECT_FALSE(next) << "after the last function, " << expected.name;
    }
  }
  std::cout << "[ lazy     ] " << GetParam() << ": " << all.size() << " functions, " << fde_ranges
            << " FDE ranges\n";
  if (GetParam().ends_with("_stripped")) {
    EXPECT_GT(fde_ranges, 0u);
  }
}

// The search skips names without the query's literal identifier: that must
// never skip a real match. Every function, asked by each spelling a user
// may type, is found.
TEST_P(ElfLazy, EverySpellingOfEveryNameIsFound) {
  auto image = ElfImage::open(binary(GetParam()));
  ASSERT_TRUE(image);
  size_t keyed = 0;
  size_t checked = 0;
  for (const FunctionSymbol* function : image->all_functions()) {
    if (function->is_fde_range()) continue;
    std::set<std::string> names = {function->name};
    for (const std::string& alias : function->aliases) names.insert(alias);
    for (const std::string& spelling :
         {function->demangled, without_parameters(function->demangled), short_function_name(function->demangled)}) {
      const std::string key = literal_identifier(spelling);
      if (key.empty()) continue;
      ++keyed;
      bool contained = false;
      for (const std::string& name : names) contained = contained || name.find(key) != std::string::npos;
      EXPECT_TRUE(contained) << "\"" << spelling << "\" -> key \"" << key << "\" is not in " << function->name;
    }
    // The search itself, on a sample (it scans the whole table each time).
    if (checked++ % 97 != 0) continue;
    const std::string spelling = short_function_name(function->demangled);
    const auto found = image->find_functions(spelling);
    const bool has = std::find(found.begin(), found.end(), function) != found.end();
    const bool clone = function->demangled.find(" [clone ") != std::string::npos ||
                       function->name.find(".cold") != std::string::npos;
    if (!clone) {
      EXPECT_TRUE(has) << spelling << " does not find " << function->name;
    }
  }
  EXPECT_GT(keyed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Binaries, ElfLazy,
                         ::testing::Values("calls_pie", "calls_nopie", "calls_pie_stripped", "calls_nopie_stripped",
                                           "rust_sample", "rust_sample_stripped", "/lib/x86_64-linux-gnu/libc.so.6",
                                           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
                         [](const auto& test_case) { return test::binary_test_name(test_case.param); });

TEST(LiteralIdentifier, TheFunctionsOwnIdentifier) {
  EXPECT_EQ(literal_identifier("settle"), "settle");
  EXPECT_EQ(literal_identifier("svc::settle(int) const"), "settle");
  EXPECT_EQ(literal_identifier("std::_Function_handler<int (int), F>::_M_invoke"), "_M_invoke");
  EXPECT_EQ(literal_identifier("int twice<int>(int)"), "twice");
  EXPECT_EQ(literal_identifier("(anonymous namespace)::helper"), "helper");
  EXPECT_EQ(literal_identifier("Foo::~Foo()"), "Foo");
  EXPECT_EQ(literal_identifier("f [clone .cold]"), "f");
  EXPECT_EQ(literal_identifier("memcpy@GLIBC_2.2.5"), "GLIBC_2");
  EXPECT_EQ(literal_identifier("_ZN3svc6settleEi"), "_ZN3svc6settleEi");
}

TEST(LiteralIdentifier, NoneWhereTheMangledSpellingDiffers) {
  EXPECT_EQ(literal_identifier("lam_f(int)::{lambda(int)#1}::operator()"), "");
  EXPECT_EQ(literal_identifier("operator new(unsigned long)"), "");
  EXPECT_EQ(literal_identifier("Foo::operator bool() const"), "");
  EXPECT_EQ(literal_identifier("std::allocator<char>::allocator"), "");
  EXPECT_EQ(literal_identifier("std::string"), "");
  EXPECT_EQ(literal_identifier("int"), "");
  EXPECT_EQ(literal_identifier("f\xc3\xa9"), "");
  EXPECT_EQ(literal_identifier(""), "");
}

}  // namespace
}  // namespace xref
