#include "eh_frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "command_output.h"
#include "elf_section.h"

namespace xref {
namespace {

using test::try_command_lines;
using test::read_elf_section;

std::string describe(const std::vector<FdeRange>& ranges) {
  std::string text;
  char line[64];
  for (const auto& r : ranges) {
    std::snprintf(line, sizeof line, "  %#llx..%#llx\n", static_cast<unsigned long long>(r.start),
                  static_cast<unsigned long long>(r.start + r.size));
    text += line;
  }
  return text;
}

// ---------------------------------------------------------------------------
// Ground truth: readelf on the built fixtures.

// The non-empty FDE ranges readelf prints for the .eh_frame section only
// (an unstripped image may also have a .debug_frame, dumped after it).
std::vector<FdeRange> readelf_fde_ranges(const std::string& path) {
  auto lines = try_command_lines("readelf --debug-dump=frames '" + path + "' 2>/dev/null");
  EXPECT_TRUE(lines) << "readelf failed on " << path;
  std::vector<FdeRange> ranges;
  if (!lines) return ranges;
  static const std::regex section_header(R"(^Contents of the (\S+) section:)");
  static const std::regex fde_line(R"( FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  bool in_eh_frame = false;
  for (const auto& line : *lines) {
    std::smatch match;
    if (std::regex_search(line, match, section_header)) {
      in_eh_frame = match[1] == ".eh_frame";
    } else if (in_eh_frame && std::regex_search(line, match, fde_line)) {
      const uint64_t start = std::stoull(match[1], nullptr, 16);
      const uint64_t end = std::stoull(match[2], nullptr, 16);
      if (end > start) ranges.push_back({start, end - start});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const FdeRange& a, const FdeRange& b) {
    return a.start != b.start ? a.start < b.start : a.size < b.size;
  });
  return ranges;
}

std::vector<FdeRange> parse_file(const std::string& path) {
  auto section = read_elf_section(path, ".eh_frame");
  EXPECT_TRUE(section) << "no .eh_frame in " << path;
  if (!section) return {};
  auto ranges = parse_eh_frame(section->bytes, section->addr);
  EXPECT_TRUE(ranges) << path << ": " << ranges.error().message;
  return ranges ? *ranges : std::vector<FdeRange>{};
}

// The address of a symbol, from nm on the unstripped image.
uint64_t nm_address(const std::string& path, const std::string& symbol) {
  auto lines = try_command_lines("nm '" + path + "'");
  if (!lines) return 0;
  for (const auto& line : *lines) {
    if (line.size() > 19 && line.substr(19) == symbol) {
      return std::stoull(line.substr(0, 16), nullptr, 16);
    }
  }
  return 0;
}

class EhFrameFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(EhFrameFixture, MatchesReadelf) {
  const std::string path = std::string(XREF_FIXTURE_DIR) + "/" + GetParam();
  const auto expected = readelf_fde_ranges(path);
  ASSERT_FALSE(expected.empty()) << "readelf found no FDEs in " << path;
  const auto actual = parse_file(path);
  EXPECT_EQ(actual, expected) << "parsed:\n"
                              << describe(actual) << "readelf:\n"
                              << describe(expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EhFrameFixture,
                         ::testing::Values("calls_pie", "calls_nopie", "calls_pie_stripped",
                                           "calls_nopie_stripped", "rust_sample",
                                           "rust_sample_stripped"));

bool has_range_starting_at(const std::vector<FdeRange>& ranges, uint64_t start) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const FdeRange& r) { return r.start == start; });
}

TEST(EhFrame, StrippedImagesStillLocateKnownFunctions) {
  const std::string dir = XREF_FIXTURE_DIR;
  for (const char* name : {"calls_pie", "calls_nopie"}) {
    const uint64_t leaf_add = nm_address(dir + "/" + name, "leaf_add");
    ASSERT_NE(leaf_add, 0u) << name;
    EXPECT_TRUE(has_range_starting_at(parse_file(dir + "/" + name + "_stripped"), leaf_add))
        << name;
  }
  // rustc's own functions, and a closure, each have an FDE.
  auto lines = try_command_lines("nm '" + dir + "/rust_sample' | c++filt -i");
  ASSERT_TRUE(lines);
  const auto ranges = parse_file(dir + "/rust_sample_stripped");
  int found = 0;
  for (const auto& line : *lines) {
    if (line.size() < 20) continue;
    const std::string name = line.substr(19);
    if (name == "rust_sample::some_fn" || name == "rust_sample::ledger::Account::deposit" ||
        name == "rust_sample::main::{{closure}}") {
      EXPECT_TRUE(has_range_starting_at(ranges, std::stoull(line.substr(0, 16), nullptr, 16)))
          << name;
      ++found;
    }
  }
  EXPECT_EQ(found, 4);  // two closures
}

// Truncating or corrupting a real section must give a result or an error,
// never a crash or an out-of-bounds read (run under ASan to see the latter).
TEST(EhFrame, SurvivesTruncationAndCorruption) {
  auto section = read_elf_section(std::string(XREF_FIXTURE_DIR) + "/rust_sample", ".eh_frame");
  ASSERT_TRUE(section);
  const auto& bytes = section->bytes;
  for (size_t length = 0; length < bytes.size(); length += 1 + length / 64) {
    auto result = parse_eh_frame(std::span(bytes.data(), length), section->addr);
    EXPECT_TRUE(result || result.error().code == ErrorCode::elf_error) << result.error().message;
  }
  std::mt19937 random(12345);
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> corrupted = bytes;
    for (int flips = 0; flips < 4; ++flips) {
      corrupted[random() % corrupted.size()] = static_cast<uint8_t>(random());
    }
    auto result = parse_eh_frame(corrupted, section->addr);
    EXPECT_TRUE(result || result.error().code == ErrorCode::elf_error) << result.error().message;
  }
}

// ---------------------------------------------------------------------------
// Hand-made sections: each encoding and augmentation, and malformed input.

constexpr uint64_t kSectionVa = 0x402000;

class SectionBuilder {
 public:
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  SectionBuilder& u8(uint64_t v) { return fixed(v, 1); }
  SectionBuilder& u16(uint64_t v) { return fixed(v, 2); }
  SectionBuilder& u32(uint64_t v) { return fixed(v, 4); }
  SectionBuilder& u64(uint64_t v) { return fixed(v, 8); }
  SectionBuilder& fixed(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  SectionBuilder& uleb(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      bytes_.push_back(static_cast<uint8_t>(b | (v ? 0x80 : 0)));
    } while (v);
    return *this;
  }
  SectionBuilder& sleb(int64_t v) {
    for (;;) {
      const uint8_t b = static_cast<uint8_t>(v & 0x7f);
      v >>= 7;
      const bool done = (v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40));
      bytes_.push_back(static_cast<uint8_t>(b | (done ? 0 : 0x80)));
      if (done) return *this;
    }
  }
  SectionBuilder& str(const std::string& s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    bytes_.push_back(0);
    return *this;
  }
  SectionBuilder& raw(const std::vector<uint8_t>& v) {
    bytes_.insert(bytes_.end(), v.begin(), v.end());
    return *this;
  }
  void patch_u32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void patch_u64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  // The static VA the next byte will have.
  uint64_t va() const { return kSectionVa + bytes_.size(); }

  struct CieSpec {
    std::string augmentation = "zR";
    std::vector<uint8_t> augmentation_data = {0x1b};
    int version = 1;
    bool extended = false;  // 0xffffffff + 64-bit length, 8-byte CIE id
  };

  // Appends a CIE and returns its offset.
  size_t cie(const CieSpec& spec) {
    const size_t start = begin_record(spec.extended);
    fixed(0, spec.extended ? 8 : 4);  // CIE id
    u8(static_cast<uint64_t>(spec.version)).str(spec.augmentation).uleb(1).sleb(-8);
    if (spec.version == 1) {
      u8(16);  // return address register: a byte in version 1, a ULEB128 in 3
    } else {
      uleb(16);
    }
    if (!spec.augmentation.empty() && spec.augmentation[0] == 'z') {
      uleb(spec.augmentation_data.size()).raw(spec.augmentation_data);
    }
    u8(0x0c).u8(7).u8(8);  // DW_CFA_def_cfa rsp+8
    end_record(start, spec.extended);
    return start;
  }

  // Appends an FDE for the CIE at `cie_offset`; `pointers` writes
  // initial_location and address_range.
  size_t fde(size_t cie_offset, const std::function<void(SectionBuilder&)>& pointers,
             std::optional<std::vector<uint8_t>> augmentation_data = std::vector<uint8_t>{},
             bool extended = false) {
    const size_t start = begin_record(extended);
    fixed(size() - cie_offset, extended ? 8 : 4);  // CIE pointer: back from this field
    pointers(*this);
    if (augmentation_data) uleb(augmentation_data->size()).raw(*augmentation_data);
    u8(0x41).u8(0x0e).u8(16);  // advance_loc 1; def_cfa_offset 16
    end_record(start, extended);
    return start;
  }

  SectionBuilder& terminator() { return u32(0); }

 private:
  size_t begin_record(bool extended) {
    const size_t start = size();
    if (extended) {
      u32(0xffffffff).u64(0);
    } else {
      u32(0);
    }
    return start;
  }
  void end_record(size_t start, bool extended) {
    while (size() % 4 != 0) u8(0);  // DW_CFA_nop padding
    if (extended) {
      patch_u64(start + 4, size() - start - 12);
    } else {
      patch_u32(start, static_cast<uint32_t>(size() - start - 4));
    }
  }

  std::vector<uint8_t> bytes_;
};

Result<std::vector<FdeRange>> parse(const SectionBuilder& b) {
  return parse_eh_frame(b.bytes(), kSectionVa);
}

std::vector<FdeRange> parse_ok(const SectionBuilder& b) {
  auto result = parse(b);
  EXPECT_TRUE(result) << result.error().message;
  return result ? *result : std::vector<FdeRange>{};
}

void expect_error(const SectionBuilder& b, const std::string& message_part, size_t offset) {
  auto result = parse(b);
  ASSERT_FALSE(result) << "parsed malformed input:\n" << describe(*result);
  EXPECT_EQ(result.error().code, ErrorCode::elf_error);
  char where[32];
  std::snprintf(where, sizeof where, "at offset 0x%zx", offset);
  EXPECT_NE(result.error().message.find(message_part), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find(where), std::string::npos)
      << result.error().message << " (expected " << where << ")";
}

constexpr uint64_t kFunction = 0x401230;

struct EncodingCase {
  const char* name;
  uint8_t encoding;
  std::function<void(SectionBuilder&)> write;  // initial_location and address_range
  uint64_t expected_start = kFunction;
};

void PrintTo(const EncodingCase& c, std::ostream* out) { *out << c.name; }

class EhFrameEncoding : public ::testing::TestWithParam<EncodingCase> {};

TEST_P(EhFrameEncoding, DecodesInitialLocationAndRange) {
  const auto& param = GetParam();
  SectionBuilder b;
  const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {param.encoding}});
  b.fde(cie, param.write);
  b.terminator();
  EXPECT_EQ(parse_ok(b), (std::vector<FdeRange>{{param.expected_start, 0x44}})) << param.name;
}

// pcrel values are relative to the VA of the initial_location field itself.
int64_t pcrel(const SectionBuilder& b) { return static_cast<int64_t>(kFunction - b.va()); }

INSTANTIATE_TEST_SUITE_P(
    AllFormats, EhFrameEncoding,
    ::testing::Values(
        EncodingCase{"absptr", 0x00, [](SectionBuilder& b) { b.u64(kFunction).u64(0x44); }},
        EncodingCase{"udata2", 0x02, [](SectionBuilder& b) { b.u16(0x1230).u16(0x44); }, 0x1230},
        EncodingCase{"udata4", 0x03, [](SectionBuilder& b) { b.u32(kFunction).u32(0x44); }},
        EncodingCase{"udata8", 0x04, [](SectionBuilder& b) { b.u64(kFunction).u64(0x44); }},
        EncodingCase{"uleb128", 0x01, [](SectionBuilder& b) { b.uleb(kFunction).uleb(0x44); }},
        EncodingCase{"sleb128", 0x09, [](SectionBuilder& b) { b.sleb(kFunction).sleb(0x44); }},
        EncodingCase{"sdata4", 0x0b, [](SectionBuilder& b) { b.u32(kFunction).u32(0x44); }},
        EncodingCase{"sdata8", 0x0c, [](SectionBuilder& b) { b.u64(kFunction).u64(0x44); }},
        EncodingCase{"pcrel|sdata4", 0x1b,
                     [](SectionBuilder& b) { b.u32(static_cast<uint64_t>(pcrel(b))).u32(0x44); }},
        EncodingCase{"pcrel|sdata2", 0x1a,
                     [](SectionBuilder& b) { b.u16(static_cast<uint64_t>(pcrel(b))).u16(0x44); }},
        EncodingCase{"pcrel|sdata8", 0x1c,
                     [](SectionBuilder& b) { b.u64(static_cast<uint64_t>(pcrel(b))).u64(0x44); }},
        EncodingCase{"pcrel|sleb128", 0x19,
                     [](SectionBuilder& b) { b.sleb(pcrel(b)).sleb(0x44); }}),
    [](const auto& test_case) {
      std::string name = test_case.param.name;
      std::replace_if(
          name.begin(), name.end(),
          [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
      return name;
    });

// udata4 is zero-extended: a pcrel udata4 cannot point backwards.
TEST(EhFrame, PcrelUdata4IsNotSignExtended) {
  SectionBuilder b;
  const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x13}});
  uint64_t field_va = 0;
  b.fde(cie, [&](SectionBuilder& s) {
    field_va = s.va();
    s.u32(0xfffffff0).u32(0x10);
  });
  EXPECT_EQ(parse_ok(b), (std::vector<FdeRange>{{field_va + 0xfffffff0, 0x10}}));
}

TEST(EhFrame, AugmentationsAndVersions) {
  SectionBuilder b;
  // zPLR: personality as indirect|pcrel|sdata4 (what GCC and rustc emit), LSDA pcrel|sdata4.
  const size_t zplr =
      b.cie({.augmentation = "zPLR", .augmentation_data = {0x9b, 1, 2, 3, 4, 0x1b, 0x1b}});
  b.fde(
      zplr, [](SectionBuilder& s) { s.u32(static_cast<uint64_t>(pcrel(s)) + 0x100).u32(0x10); },
      std::vector<uint8_t>{0, 0, 0, 0});
  // zPR with a uleb128 personality: its multi-byte value must be skipped exactly.
  const size_t zpr =
      b.cie({.augmentation = "zPR", .augmentation_data = {0x01, 0xff, 0xff, 0x03, 0x03}});
  b.fde(zpr, [](SectionBuilder& s) { s.u32(kFunction + 0x200).u32(0x20); });
  // Version 3: the return address register is a ULEB128.
  const size_t v3 = b.cie({.augmentation = "zR", .augmentation_data = {0x03}, .version = 3});
  b.fde(v3, [](SectionBuilder& s) { s.u32(kFunction + 0x300).u32(0x30); });
  // No augmentation: absptr, and no augmentation data in the FDE.
  const size_t plain = b.cie({.augmentation = "", .augmentation_data = {}});
  b.fde(
      plain, [](SectionBuilder& s) { s.u64(kFunction + 0x400).u64(0x40); }, std::nullopt);
  // "S" alone (signal frame, no 'z'): also absptr and no augmentation data.
  const size_t signal = b.cie({.augmentation = "S", .augmentation_data = {}});
  b.fde(
      signal, [](SectionBuilder& s) { s.u64(kFunction + 0x500).u64(0x50); }, std::nullopt);
  // zRS and zRB: data-less letters after R.
  const size_t zrs = b.cie({.augmentation = "zRS", .augmentation_data = {0x03}});
  b.fde(zrs, [](SectionBuilder& s) { s.u32(kFunction + 0x600).u32(0x60); });
  const size_t zrb = b.cie({.augmentation = "zRB", .augmentation_data = {0x03}});
  b.fde(zrb, [](SectionBuilder& s) { s.u32(kFunction + 0x700).u32(0x70); });
  b.terminator();
  const std::vector<FdeRange> expected = {{kFunction + 0x100, 0x10}, {kFunction + 0x200, 0x20},
                                          {kFunction + 0x300, 0x30}, {kFunction + 0x400, 0x40},
                                          {kFunction + 0x500, 0x50}, {kFunction + 0x600, 0x60},
                                          {kFunction + 0x700, 0x70}};
  EXPECT_EQ(parse_ok(b), expected) << describe(parse_ok(b));
}

TEST(EhFrame, ExtendedLengthRecords) {
  SectionBuilder b;
  const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x03}, .extended = true});
  b.fde(
      cie, [](SectionBuilder& s) { s.u32(kFunction).u32(0x44); }, std::vector<uint8_t>{}, true);
  // A normal FDE may share the 64-bit CIE.
  b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction + 0x100).u32(0x8); });
  b.terminator();
  EXPECT_EQ(parse_ok(b), (std::vector<FdeRange>{{kFunction, 0x44}, {kFunction + 0x100, 0x8}}));
}

TEST(EhFrame, SortsSkipsEmptyAndStopsAtTerminator) {
  SectionBuilder b;
  const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x03}});
  b.fde(cie, [](SectionBuilder& s) { s.u32(0x3000).u32(0x10); });
  b.fde(cie, [](SectionBuilder& s) { s.u32(0x1000).u32(0x0); });  // empty: skipped
  b.fde(cie, [](SectionBuilder& s) { s.u32(0x2000).u32(0x20); });
  b.terminator();
  b.u32(0xdeadbeef).u32(0x12345678);  // after the terminator: never read
  EXPECT_EQ(parse_ok(b), (std::vector<FdeRange>{{0x2000, 0x20}, {0x3000, 0x10}}));

  // A section without a terminator ends at its last byte; an empty one has no FDEs.
  SectionBuilder unterminated;
  const size_t c = unterminated.cie({.augmentation = "zR", .augmentation_data = {0x03}});
  unterminated.fde(c, [](SectionBuilder& s) { s.u32(0x2000).u32(0x20); });
  EXPECT_EQ(parse_ok(unterminated), (std::vector<FdeRange>{{0x2000, 0x20}}));
  EXPECT_TRUE(parse_ok(SectionBuilder{}).empty());
}

TEST(EhFrame, TruncatedLength) {
  SectionBuilder short_field;
  short_field.u8(0x10).u8(0);
  expect_error(short_field, "truncated record length", 0);

  SectionBuilder b;
  const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x03}});
  const size_t fde = b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction).u32(0x44); });
  b.patch_u32(fde, 0x100);  // longer than the section
  expect_error(b, "runs past the end of the section", fde);

  SectionBuilder extended;
  extended.u32(0xffffffff).u32(0);
  expect_error(extended, "truncated extended length", 4);
}

TEST(EhFrame, BadCiePointer) {
  {
    SectionBuilder b;
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x03}});
    const size_t fde = b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction).u32(0x44); });
    b.patch_u32(fde + 4, 0x1000);  // before the start of the section
    expect_error(b, "points before the section", fde + 4);
  }
  {
    SectionBuilder b;
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x03}});
    const size_t first = b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction).u32(0x44); });
    const size_t second = b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction + 0x100).u32(0x44); });
    b.patch_u32(second + 4, static_cast<uint32_t>(second + 4 - first));  // at an FDE
    expect_error(b, "which is not a CIE", second + 4);
    b.patch_u32(second + 4,
                static_cast<uint32_t>(second + 4 - (cie + 2)));  // into the middle of a CIE
    expect_error(b, "which is not a CIE", second + 4);
  }
}

TEST(EhFrame, UnknownOrUnsupportedEncoding) {
  // Where a "zR" CIE keeps its R byte: 4 length + 4 id + 1 version
  // + 3 "zR\0" + code and data alignment, RA register, data length, 1 byte each.
  constexpr size_t kEncodingOffset = 16;
  const struct {
    uint8_t encoding;
    const char* message;
  } cases[] = {
      {0x0f, "unknown FDE pointer encoding 0xf"},
      {0x05, "unknown FDE pointer encoding 0x5"},
      {0x9b, "indirect FDE pointer encoding 0x9b"},
      {0x3b, "unsupported FDE pointer application in encoding 0x3b"},  // datarel
      {0x2b, "unsupported FDE pointer application in encoding 0x2b"},  // textrel
      {0xff, "FDE pointer encoding is 'omit'"},
  };
  for (const auto& c : cases) {
    SectionBuilder b;
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {c.encoding}});
    b.fde(cie, [](SectionBuilder& s) { s.u32(kFunction).u32(0x44); });
    SCOPED_TRACE(c.message);
    expect_error(b, c.message, kEncodingOffset);
  }
  SectionBuilder personality;
  personality.cie({.augmentation = "zPR", .augmentation_data = {0x0d, 0, 0x1b}});
  expect_error(personality, "unsupported personality pointer encoding 0xd",
               kEncodingOffset + 1);  // "zPR\0"
}

TEST(EhFrame, OtherMalformedRecords) {
  {
    SectionBuilder b;  // version 2 never existed for .eh_frame
    b.cie({.augmentation = "zR", .augmentation_data = {0x1b}, .version = 2});
    expect_error(b, "unsupported CIE version 2", 8);
  }
  {
    SectionBuilder b;  // a letter of unknown meaning may hide data of unknown size
    b.cie({.augmentation = "zXR", .augmentation_data = {0x1b}});
    expect_error(b, "unknown CIE augmentation character 'X'", 10);
  }
  {
    SectionBuilder b;  // R without z has nowhere to keep its data
    b.cie({.augmentation = "R", .augmentation_data = {}});
    expect_error(b, "lacks a leading 'z'", 9);
  }
  {
    SectionBuilder b;  // the augmentation data length claims more than the CIE holds
    b.cie({.augmentation = "zR", .augmentation_data = {0x1b}});
    std::vector<uint8_t> bytes = b.bytes();
    bytes[15] = 0x40;  // the augmentation data length
    auto result = parse_eh_frame(bytes, kSectionVa);
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().message.find("augmentation data runs past the record at offset 0xf"),
              std::string::npos)
        << result.error().message;
  }
  {
    SectionBuilder b;  // an FDE too short for its udata8 initial_location
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x04}});
    const size_t fde = b.fde(
        cie, [](SectionBuilder&) {}, std::nullopt);
    expect_error(b, "bad FDE initial_location", fde + 8);
  }
  {
    SectionBuilder b;  // start + range past 2^64
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x04}});
    const size_t fde = b.fde(cie, [](SectionBuilder& s) { s.u64(~uint64_t{0} - 4).u64(0x10); });
    expect_error(b, "wraps the address space", fde + 16);
  }
  {
    SectionBuilder b;  // a ULEB128 wider than 64 bits
    const size_t cie = b.cie({.augmentation = "zR", .augmentation_data = {0x01}});
    const size_t fde = b.fde(cie, [](SectionBuilder& s) {
      s.raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}).uleb(1);
    });
    expect_error(b, "bad FDE initial_location", fde + 8);
  }
}

TEST(EhFrame, Leb128Limits) {
  // The largest values that fit, and redundant padding, still decode.
  SectionBuilder b;
  const size_t u = b.cie({.augmentation = "zR", .augmentation_data = {0x01}});
  b.fde(u, [](SectionBuilder& s) {
    s.raw({0x80, 0x80, 0x80, 0x00}).raw({0x90, 0x80, 0x00});
  });  // 0, 0x10
  const size_t sl = b.cie({.augmentation = "zR", .augmentation_data = {0x09}});
  b.fde(sl, [](SectionBuilder& s) { s.sleb(0x7fffffffffff0000).sleb(0x100); });
  b.fde(u, [](SectionBuilder& s) { s.uleb(0xffffffffffffff00).uleb(0x10); });
  EXPECT_EQ(parse_ok(b), (std::vector<FdeRange>{
                             {0, 0x10}, {0x7fffffffffff0000, 0x100}, {0xffffffffffffff00, 0x10}}));
}

// Found by the eh_frame fuzz target: augmentation bytes were quoted as they
// were, so a newline among them split the message and other bytes made it
// invalid UTF-8.
TEST(EhFrame, AugmentationBytesAreQuotedPrintably) {
  {
    SectionBuilder b;
    b.cie({.augmentation = "z\nR", .augmentation_data = {0x1b}});
    expect_error(b, "unknown CIE augmentation character byte 0x0a", 10);
  }
  {
    SectionBuilder b;
    b.cie({.augmentation = "R\xff", .augmentation_data = {}});
    expect_error(b, "CIE augmentation \"R\\xff\" lacks a leading 'z'", 9);
  }
}

}  // namespace
}  // namespace xref
