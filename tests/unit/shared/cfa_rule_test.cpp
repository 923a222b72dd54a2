#include "cfa_rule.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "elf_section.h"
#include "objdump_listing.h"

namespace xref {
namespace {

using test::read_elf_section;
using test::try_command_lines;

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string describe(const Result<CfaRule>& rule) {
  return rule ? to_string(*rule) : "error: " + rule.error().message;
}

// ---------------------------------------------------------------------------
// Ground truth: readelf --debug-dump=frames-interp, every row of every FDE.

struct ReadelfRow {
  uint64_t location = 0;
  std::string cfa;  // "rsp+8", "rbp+16", "exp"
};

struct ReadelfFde {
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<ReadelfRow> rows;
};

bool is_hex(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) result.push_back(word);
  return result;
}

bool readelf_installed() { return try_command_lines("command -v readelf").has_value(); }

// The FDEs readelf prints for .eh_frame (an unstripped image may also have a
// .debug_frame, dumped after it). readelf prints no rows for an FDE whose
// instructions are all nops; its CFA is then the CIE's, from the CIE's row.
// -wN: do not follow .gnu_debuglink, whose separate debug file has a NOBITS
// .eh_frame and makes readelf exit 1.
std::vector<ReadelfFde> readelf_fdes(const std::string& path) {
  auto lines = try_command_lines("readelf -wN --debug-dump=frames-interp '" + path + "' 2>/dev/null");
  EXPECT_TRUE(lines) << "readelf failed on " << path;
  if (!lines) return {};
  std::vector<ReadelfFde> fdes;
  std::vector<uint64_t> fde_cies;
  std::map<uint64_t, std::string> cie_cfa;  // by CIE offset: the CFA of its last row
  uint64_t cie_offset = 0;
  bool in_eh_frame = false;
  bool in_cie = false;
  bool in_fde = false;
  for (const std::string& line : *lines) {
    if (line.starts_with("Contents of the ")) {
      in_eh_frame = line.starts_with("Contents of the .eh_frame section");
      in_cie = in_fde = false;
      continue;
    }
    if (!in_eh_frame) continue;
    const auto fields = words(line);
    // "00000018 0000000000000024 0000001c FDE cie=00000000 pc=0000000000026000..0000000000026360"
    if (fields.size() >= 4 && fields[3] == "CIE") {
      cie_offset = std::stoull(fields[0], nullptr, 16);
      in_cie = true;
      in_fde = false;
    } else if (fields.size() >= 6 && fields[3] == "FDE") {
      const std::string& pc = fields[5];
      const size_t dots = pc.find("..");
      EXPECT_TRUE(fields[4].starts_with("cie=") && pc.starts_with("pc=") && dots != std::string::npos) << line;
      if (dots == std::string::npos) continue;
      ReadelfFde fde;
      fde.start = std::stoull(pc.substr(3, dots - 3), nullptr, 16);
      fde.end = std::stoull(pc.substr(dots + 2), nullptr, 16);
      fdes.push_back(fde);
      fde_cies.push_back(std::stoull(fields[4].substr(4), nullptr, 16));
      in_cie = false;
      in_fde = true;
    } else if (fields.size() >= 2 && fields[0].size() == 16 && is_hex(fields[0])) {
      // A row: "0000000000026006 rsp+24   c-8"
      const uint64_t location = std::stoull(fields[0], nullptr, 16);
      if (in_fde) {
        fdes.back().rows.push_back({location, fields[1]});
      } else if (in_cie) {
        cie_cfa[cie_offset] = fields[1];
      }
    }
  }
  for (size_t i = 0; i < fdes.size(); ++i) {
    const auto cie = cie_cfa.find(fde_cies[i]);
    if (fdes[i].rows.empty() && cie != cie_cfa.end()) fdes[i].rows.push_back({fdes[i].start, cie->second});
  }
  return fdes;
}

// readelf's x86-64 names of DWARF registers 0-16.
std::optional<uint16_t> dwarf_register_number(const std::string& name) {
  static const char* const kNames[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                       "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
  for (uint16_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return i;
  }
  return std::nullopt;
}

// Whether `actual` is what readelf printed as `expected` ("rsp+8", "exp");
// on a mismatch, says why.
std::optional<std::string> mismatch(const std::string& expected, const Result<CfaRule>& actual) {
  if (expected == "exp") {
    if (!actual && actual.error().code == ErrorCode::unsupported &&
        actual.error().message.find("DW_CFA_def_cfa_expression") != std::string::npos) {
      return std::nullopt;
    }
    return "expected the CFA-expression error, got " + describe(actual);
  }
  const size_t sign = expected.find_first_of("+-", 1);
  const auto number = dwarf_register_number(expected.substr(0, sign));
  if (sign == std::string::npos || !number) return "cannot read readelf's CFA \"" + expected + "\"";
  const int64_t offset = std::stoll(expected.substr(sign));
  if (!actual) return "expected " + expected + ", got " + describe(actual);
  const CfaRule::Register reg = *number == kDwarfRsp   ? CfaRule::Register::rsp
                                : *number == kDwarfRbp ? CfaRule::Register::rbp
                                                       : CfaRule::Register::other;
  if (actual->dwarf_register != *number || actual->offset != offset || actual->reg != reg) {
    return "expected " + expected + ", got " + describe(actual);
  }
  return std::nullopt;
}

std::string binary_path(const std::string& name) {
  if (name.starts_with("/")) return name;
  if (name == "targets/sample_service") return XREF_SAMPLE_SERVICE;  // build/sample_service
  if (name.starts_with("targets/")) return std::string(XREF_FIXTURE_DIR) + "/../" + name;
  return std::string(XREF_FIXTURE_DIR) + "/" + name;
}

class CfaRuleReadelf : public ::testing::TestWithParam<const char*> {};

// At every row's location and at the last byte before the next row (or the
// FDE's end), cfa_rule_at gives the CFA readelf prints.
TEST_P(CfaRuleReadelf, EveryRowMatchesReadelf) {
  ASSERT_TRUE(readelf_installed()) << "readelf not found in PATH: install binutils";
  const std::string path = binary_path(GetParam());
  ASSERT_TRUE(std::ifstream(path).good())
      << path << " does not exist: build everything first (cmake --build build), the targets included";
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  ASSERT_NE(image->eh_frame(), nullptr) << path << ": " << image->fde_error();

  const auto fdes = readelf_fdes(path);
  ASSERT_FALSE(fdes.empty()) << "readelf found no FDEs in " << path;
  size_t fdes_checked = 0;
  size_t rows_checked = 0;
  size_t addresses_checked = 0;
  size_t expression_rows = 0;
  size_t failures = 0;
  for (const ReadelfFde& fde : fdes) {
    if (fde.end <= fde.start) continue;  // an empty FDE covers no code
    ++fdes_checked;
    for (size_t i = 0; i < fde.rows.size(); ++i) {
      const ReadelfRow& row = fde.rows[i];
      const uint64_t next = i + 1 < fde.rows.size() ? std::min(fde.rows[i + 1].location, fde.end) : fde.end;
      if (row.location >= next || row.location < fde.start) continue;  // superseded or outside the FDE
      ++rows_checked;
      if (row.cfa == "exp") ++expression_rows;
      std::vector<uint64_t> vas = {row.location};
      if (next - 1 != row.location) vas.push_back(next - 1);
      for (const uint64_t va : vas) {
        ++addresses_checked;
        const auto problem = mismatch(row.cfa, cfa_rule_at(*image, va));
        if (problem && ++failures <= 20) {
          ADD_FAILURE() << path << " at " << hex(va) << " (FDE " << hex(fde.start) << ".." << hex(fde.end)
                        << ", row " << hex(row.location) << "): " << *problem;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u) << "addresses where cfa_rule_at and readelf disagree";
  EXPECT_GT(rows_checked, 0u);
  std::cout << "[ readelf  ] " << GetParam() << ": " << fdes_checked << " FDEs, " << rows_checked << " rows ("
            << expression_rows << " exp), " << addresses_checked << " addresses checked\n";
  RecordProperty("fdes", static_cast<int>(fdes_checked));
  RecordProperty("rows", static_cast<int>(rows_checked));
  RecordProperty("addresses", static_cast<int>(addresses_checked));
}

INSTANTIATE_TEST_SUITE_P(Binaries, CfaRuleReadelf,
                         ::testing::Values("calls_pie", "calls_nopie", "calls_pie_stripped", "rust_sample",
                                           "targets/sample_service", "targets/trace_target",
                                           "targets/trace_target_stripped", "targets/rust_target",
                                           "/lib/x86_64-linux-gnu/libc.so.6"),
                         [](const auto& test_case) { return test::binary_test_name(test_case.param); });

// ---------------------------------------------------------------------------
// Known code shapes.

TEST(CfaRule, FirstInstructionOfAFunctionIsRspPlus8) {
  for (const char* name : {"calls_pie", "calls_nopie", "rust_sample"}) {
    const std::string path = binary_path(name);
    auto image = ElfImage::open(path);
    ASSERT_TRUE(image) << image.error().message;
    ASSERT_NE(image->eh_frame(), nullptr) << image->fde_error();
    size_t checked = 0;
    for (const EhFrameFde& fde : image->eh_frame()->fdes) {
      // Named functions only: the .plt FDE (PLT0 pushes before it jumps) has no symbol.
      const FunctionSymbol* function = image->function_at(fde.range.start);
      if (fde.range.size == 0 || function == nullptr || function->source != SymbolSource::symtab) continue;
      // A GCC cold partition starts inside the frame of its hot part.
      if (function->name.find(".cold") != std::string::npos) continue;
      const auto rule = cfa_rule_at(*image, fde.range.start);
      EXPECT_EQ(describe(rule), "rsp+8") << name << " " << function->name;
      if (rule) {
        EXPECT_EQ(rule->reg, CfaRule::Register::rsp);
        EXPECT_EQ(rule->dwarf_register, kDwarfRsp);
      }
      ++checked;
    }
    EXPECT_GT(checked, 5u) << name;
  }
}

// Compiles a small -O0 program into `dir`; returns its path, empty on failure.
std::string build_o0_program(const std::string& dir) {
  std::ofstream(dir + "/framed.c") << "volatile long sink;\n"
                                      "__attribute__((noinline)) long framed(long x) {\n"
                                      "  long local = x * 3;\n"
                                      "  sink = local;\n"
                                      "  return local + 1;\n"
                                      "}\n"
                                      "int main(void) { return (int)framed(2); }\n";
  const std::string command =
      "cc -O0 -g -fno-omit-frame-pointer -o '" + dir + "/framed' '" + dir + "/framed.c' 2>&1";
  if (!try_command_lines(command)) return {};
  return dir + "/framed";
}

// -O0 code keeps a frame pointer: after `push rbp; mov rbp, rsp` the CFA is
// rbp+16 until the epilogue hands it back to rsp.
TEST(CfaRule, FramePointerPrologueAtO0) {
  ASSERT_TRUE(try_command_lines("command -v cc")) << "no C compiler (cc) in PATH to build the -O0 program";
  std::string dir = ::testing::TempDir() + "xref_cfa_rule_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << dir;
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() { std::filesystem::remove_all(dir); }
  } remove_dir{dir};
  const std::string path = build_o0_program(dir);
  ASSERT_FALSE(path.empty()) << "cc -O0 failed";
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  const test::ObjdumpListing listing(path);
  const auto start = listing.symbol("framed");
  ASSERT_TRUE(start);
  const auto code = listing.in_range(*start, *start + 64);
  std::optional<test::ObjdumpInstruction> push, mov, ret;
  for (const auto& instruction : code) {
    if (!push && instruction.mnemonic == "push" && instruction.operands == "%rbp") push = instruction;
    if (push && !mov && instruction.mnemonic == "mov" && instruction.operands == "%rsp,%rbp") mov = instruction;
    if (!ret && instruction.is_ret()) ret = instruction;
  }
  ASSERT_TRUE(push && mov && ret) << "no push %rbp; mov %rsp,%rbp ... ret in framed";
  ASSERT_EQ(push->next, mov->address);

  EXPECT_EQ(describe(cfa_rule_at(*image, *start)), "rsp+8");
  EXPECT_EQ(describe(cfa_rule_at(*image, push->address)), "rsp+8");
  EXPECT_EQ(describe(cfa_rule_at(*image, mov->address)), "rsp+16");
  const auto framed = cfa_rule_at(*image, mov->next);
  ASSERT_TRUE(framed) << framed.error().message;
  EXPECT_EQ(*framed, (CfaRule{CfaRule::Register::rbp, kDwarfRbp, 16}));
  EXPECT_EQ(describe(cfa_rule_at(*image, ret->address - 1)), "rbp+16");  // inside the body (or its pop)
  EXPECT_EQ(describe(cfa_rule_at(*image, ret->address)), "rsp+8");
}

TEST(CfaRule, ImageErrors) {
  auto image = ElfImage::open(binary_path("calls_pie"));
  ASSERT_TRUE(image) << image.error().message;
  const auto outside = cfa_rule_at(*image, 0x10);
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, ErrorCode::address_unmapped);
  EXPECT_NE(outside.error().message.find("no .eh_frame FDE covers static VA 0x10"), std::string::npos)
      << outside.error().message;
}

// ---------------------------------------------------------------------------
// Hand-made sections: every instruction, alignment factors, bad input.

constexpr uint64_t kSectionVa = 0x402000;
constexpr uint64_t kFunction = 0x1000;

class SectionBuilder {
 public:
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  SectionBuilder& u8(uint64_t v) { return fixed(v, 1); }
  SectionBuilder& u32(uint64_t v) { return fixed(v, 4); }
  SectionBuilder& fixed(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  SectionBuilder& raw(const std::vector<uint8_t>& v) {
    bytes_.insert(bytes_.end(), v.begin(), v.end());
    return *this;
  }

  // A CIE with augmentation `augmentation` ("zR" gets udata4 pointers;
  // "zPLR" a personality and LSDA too), alignment factors as single LEB128
  // bytes, and `instructions` as its initial instructions.
  size_t cie(uint8_t code_alignment, int8_t data_alignment, const std::vector<uint8_t>& instructions,
             const std::string& augmentation = "zR") {
    const size_t start = begin_record();
    u32(0).u8(1);
    raw(std::vector<uint8_t>(augmentation.begin(), augmentation.end())).u8(0);
    u8(code_alignment).u8(static_cast<uint8_t>(data_alignment) & 0x7f).u8(16);
    if (augmentation == "zPLR") {
      u8(7).raw({0x03, 1, 2, 3, 4, 0x03, 0x03});  // personality udata4, LSDA udata4, FDE udata4
    } else {
      u8(1).u8(0x03);
    }
    raw(instructions);
    end_record(start);
    return start;
  }

  size_t fde(size_t cie_offset, uint64_t start, uint64_t size, const std::vector<uint8_t>& instructions,
             const std::vector<uint8_t>& augmentation_data = {}) {
    const size_t record = begin_record();
    u32(bytes_.size() - cie_offset).u32(start).u32(size);
    u8(augmentation_data.size()).raw(augmentation_data).raw(instructions);
    end_record(record);
    return record;
  }

 private:
  size_t begin_record() {
    const size_t start = bytes_.size();
    u32(0);
    return start;
  }
  void end_record(size_t start) {
    while (bytes_.size() % 4 != 0) u8(0);  // DW_CFA_nop padding
    const uint32_t length = static_cast<uint32_t>(bytes_.size() - start - 4);
    for (int i = 0; i < 4; ++i) bytes_[start + i] = static_cast<uint8_t>(length >> (8 * i));
  }
  std::vector<uint8_t> bytes_;
};

Result<CfaRule> rule_at(const std::vector<uint8_t>& section, uint64_t va) {
  auto frame = read_eh_frame(section, kSectionVa);
  if (!frame) return frame.error();
  return cfa_rule_at(section, *frame, va);
}

std::string rule_text(const std::vector<uint8_t>& section, uint64_t va) { return describe(rule_at(section, va)); }

// The CIE every GCC and Clang x86-64 object starts with: def_cfa rsp+8; offset ra at cfa-8.
const std::vector<uint8_t> kStandardCieInstructions = {0x0c, 0x07, 0x08, 0x90, 0x01};

TEST(CfaRule, EveryInstruction) {
  SectionBuilder b;
  const size_t cie = b.cie(1, -8, kStandardCieInstructions);
  b.fde(cie, kFunction, 0x100,
        {
            0x41, 0x0e, 0x10, 0x86, 0x02,        // 0x1001: advance_loc 1; def_cfa_offset 16; offset rbp c-16
            0x02, 0x03, 0x0d, 0x06,              // 0x1004: advance_loc1 3; def_cfa_register rbp
            0x03, 0x10, 0x00, 0x0a,              // 0x1014: advance_loc2 16; remember_state
            0x12, 0x07, 0x7d,                    //   def_cfa_sf rsp, -3 * -8 = 24
            0x05, 0x03, 0x02,                    //   offset_extended rbx, 2
            0x11, 0x0c, 0x7d,                    //   offset_extended_sf r12, -3
            0xc3, 0x06, 0x0c,                    //   restore rbx; restore_extended r12
            0x07, 0x10, 0x08, 0x0f,              //   undefined rip; same_value r15
            0x09, 0x0e, 0x0d,                    //   register r14 in r13
            0x10, 0x0d, 0x02, 0x77, 0x08,        //   expression r13 {breg7 +8}
            0x16, 0x0c, 0x01, 0x9c,              //   val_expression r12 {DW_OP_call_frame_cfa}
            0x14, 0x0b, 0x02, 0x15, 0x0a, 0x7f,  //   val_offset r11, 2; val_offset_sf r10, -1
            0x2e, 0x10, 0x2f, 0x09, 0x01, 0x00,  //   GNU_args_size 16; GNU_negative_offset_extended r9, 1; nop
            0x04, 0x20, 0x00, 0x00, 0x00,        // 0x1034: advance_loc4 32
            0x13, 0x7c,                          //   def_cfa_offset_sf -4 * -8 = 32
            0x41, 0x0b,                          // 0x1035: restore_state
            0x41, 0x0c, 0x0a, 0x00,              // 0x1036: def_cfa r10+0
            0x41, 0x0f, 0x02, 0x77, 0x10,        // 0x1037: def_cfa_expression {breg7 +16}
            0x41, 0x0e, 0x20,                    // 0x1038: def_cfa_offset 32: still an expression
            0x41, 0x0c, 0x07, 0x08,              // 0x1039: def_cfa rsp+8
        });
  const auto& s = b.bytes();
  EXPECT_EQ(rule_text(s, 0x1000), "rsp+8");
  EXPECT_EQ(rule_text(s, 0x1001), "rsp+16");
  EXPECT_EQ(rule_text(s, 0x1003), "rsp+16");
  EXPECT_EQ(rule_text(s, 0x1004), "rbp+16");
  EXPECT_EQ(rule_text(s, 0x1013), "rbp+16");
  EXPECT_EQ(rule_text(s, 0x1014), "rsp+24");
  EXPECT_EQ(rule_text(s, 0x1033), "rsp+24");
  EXPECT_EQ(rule_text(s, 0x1034), "rsp+32");
  EXPECT_EQ(rule_text(s, 0x1035), "rbp+16");
  const auto r10 = rule_at(s, 0x1036);
  ASSERT_TRUE(r10) << r10.error().message;
  EXPECT_EQ(*r10, (CfaRule{CfaRule::Register::other, 10, 0}));
  EXPECT_EQ(to_string(*r10), "r10+0");
  for (const uint64_t va : {0x1037, 0x1038}) {
    const auto expression = rule_at(s, va);
    ASSERT_FALSE(expression) << hex(va);
    EXPECT_EQ(expression.error().code, ErrorCode::unsupported);
    EXPECT_NE(expression.error().message.find("DW_CFA_def_cfa_expression"), std::string::npos)
        << expression.error().message;
  }
  EXPECT_EQ(rule_text(s, 0x1039), "rsp+8");
  EXPECT_EQ(rule_text(s, 0x10ff), "rsp+8");
  EXPECT_EQ(rule_at(s, 0x1100).error().code, ErrorCode::address_unmapped);
  EXPECT_EQ(rule_at(s, 0xfff).error().code, ErrorCode::address_unmapped);
}

TEST(CfaRule, AlignmentFactorsAndAugmentationData) {
  SectionBuilder b;
  // Code alignment 4, data alignment -4: advance_loc 1 moves 4 bytes, def_cfa_sf -6 means 24.
  const size_t cie = b.cie(4, -4, kStandardCieInstructions);
  b.fde(cie, kFunction, 0x40, {0x41, 0x12, 0x07, 0x7a, 0x02, 0x02, 0x0e, 0x30});
  // A zPLR CIE: the FDE's 4 bytes of LSDA pointer come before its instructions.
  const size_t zplr = b.cie(1, -8, kStandardCieInstructions, "zPLR");
  b.fde(zplr, 0x2000, 0x10, {0x44, 0x0e, 0x20}, {0x0e, 0x0e, 0x0e, 0x0e});
  const auto& s = b.bytes();
  EXPECT_EQ(rule_text(s, kFunction + 3), "rsp+8");
  EXPECT_EQ(rule_text(s, kFunction + 4), "rsp+24");
  EXPECT_EQ(rule_text(s, kFunction + 11), "rsp+24");
  EXPECT_EQ(rule_text(s, kFunction + 12), "rsp+48");  // advance_loc1 2 * 4
  EXPECT_EQ(rule_text(s, 0x2003), "rsp+8");           // the augmentation data was not run as 4 def_cfa_offsets
  EXPECT_EQ(rule_text(s, 0x2004), "rsp+32");
}

TEST(CfaRule, SetLoc) {
  SectionBuilder b;
  const size_t cie = b.cie(1, -8, kStandardCieInstructions);
  // set_loc with the CIE's udata4 encoding, absolute.
  b.fde(cie, kFunction, 0x20, {0x01, 0x10, 0x10, 0x00, 0x00, 0x0e, 0x18});
  const auto& s = b.bytes();
  EXPECT_EQ(rule_text(s, 0x100f), "rsp+8");
  EXPECT_EQ(rule_text(s, 0x1010), "rsp+24");
}

void expect_damaged(const std::vector<uint8_t>& section, uint64_t va, const std::string& message_part) {
  const auto rule = rule_at(section, va);
  ASSERT_FALSE(rule) << "got " << to_string(*rule);
  EXPECT_EQ(rule.error().code, ErrorCode::elf_error);
  EXPECT_NE(rule.error().message.find(message_part), std::string::npos) << rule.error().message;
}

TEST(CfaRule, BadInstructions) {
  {
    SectionBuilder b;  // 0x2d is DW_CFA_GNU_window_save (SPARC), 0x3f unassigned: both unknown on x86-64
    const size_t cie = b.cie(1, -8, kStandardCieInstructions);
    b.fde(cie, kFunction, 0x10, {0x42, 0x3f, 0x0e, 0x10});
    b.fde(cie, 0x2000, 0x10, {0x2d});
    const auto& s = b.bytes();
    EXPECT_EQ(rule_text(s, kFunction + 1), "rsp+8");  // the bad opcode lies past the row of va
    expect_damaged(s, kFunction + 2, "unknown call-frame instruction 0x3f at offset");
    expect_damaged(s, 0x2000, "unknown call-frame instruction 0x2d");
  }
  {
    SectionBuilder b;  // def_cfa without its offset: 17 bytes of FDE before the instructions, 3 after, no padding
    const size_t cie = b.cie(1, -8, kStandardCieInstructions);
    b.fde(cie, kFunction, 0x10, {0x00, 0x0c, 0x07});
    expect_damaged(b.bytes(), kFunction, "truncated");
  }
  {
    SectionBuilder b;  // an expression block longer than the record
    const size_t cie = b.cie(1, -8, kStandardCieInstructions);
    b.fde(cie, kFunction, 0x10, {0x0f, 0x40, 0x77});
    expect_damaged(b.bytes(), kFunction, "truncated");
  }
  {
    SectionBuilder b;  // restore_state with nothing remembered
    const size_t cie = b.cie(1, -8, kStandardCieInstructions);
    b.fde(cie, kFunction, 0x10, {0x0b});
    expect_damaged(b.bytes(), kFunction, "DW_CFA_restore_state without a remembered state");
  }
  {
    SectionBuilder b;  // a CIE and FDE that never define the CFA
    const size_t cie = b.cie(1, -8, {});
    b.fde(cie, kFunction, 0x10, {0x0e, 0x10});
    expect_damaged(b.bytes(), kFunction, "no CFA rule");
  }
  {
    SectionBuilder b;  // def_cfa_sf whose scaled offset overflows
    const size_t cie = b.cie(1, -8, kStandardCieInstructions);
    b.fde(cie, kFunction, 0x10,
          {0x12, 0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f});
    expect_damaged(b.bytes(), kFunction, "overflows");
  }
}

// Truncated or corrupted real sections give a rule or an error, never a
// crash or an out-of-bounds read (run under ASan to see the latter).
TEST(CfaRule, SurvivesTruncationAndCorruption) {
  auto section = read_elf_section(binary_path("rust_sample"), ".eh_frame");
  ASSERT_TRUE(section);
  size_t rules = 0;
  size_t errors = 0;
  const auto query_all = [&](const std::vector<uint8_t>& bytes) {
    auto frame = read_eh_frame(bytes, section->addr);
    if (!frame) {
      EXPECT_EQ(frame.error().code, ErrorCode::elf_error);
      ++errors;
      return;
    }
    for (const EhFrameFde& fde : frame->fdes) {
      for (const uint64_t va : {fde.range.start, fde.range.start + fde.range.size / 2,
                                fde.range.start + fde.range.size - 1}) {
        const auto rule = cfa_rule_at(bytes, *frame, va);
        EXPECT_TRUE(rule || rule.error().code == ErrorCode::elf_error ||
                    rule.error().code == ErrorCode::unsupported || rule.error().code == ErrorCode::address_unmapped)
            << rule.error().message;
        ++(rule ? rules : errors);
      }
    }
  };
  const auto& bytes = section->bytes;
  for (size_t length = 0; length < bytes.size(); length += 1 + length / 16) {
    query_all(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)));
  }
  std::mt19937 random(4242);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> corrupted = bytes;
    for (int flips = 0; flips < 8; ++flips) corrupted[random() % corrupted.size()] = static_cast<uint8_t>(random());
    query_all(corrupted);
  }
  EXPECT_GT(rules, 0u);
  EXPECT_GT(errors, 0u);
}

}  // namespace
}  // namespace xref
