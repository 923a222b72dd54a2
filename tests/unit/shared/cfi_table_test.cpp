// compile_cfi_table against binutils' readelf (the peer: its interpreted
// frames, and the expressions of its raw dump), row for row, on C targets of
// both compilers, Debian's libc and libstdc++ and the xref binary; known
// shapes (PLT stubs, libc's signal trampoline, _start and the thread start,
// gaps); and the CFA of every row against the project's own cfa_rule_at.
#include "cfi_table.h"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cfa_rule.h"
#include "command_output.h"
#include "elf_image.h"
#include "hex.h"
#include "readelf_frames.h"
#include "unique_fd.h"

namespace xref {
namespace {

using test::ReadelfFrameFde;
using test::ReadelfFrameRow;
using test::try_command_lines;

std::string describe(const xref_unwind_row& row) {
  static const char* const kKinds[] = {"?", "rsp", "rbp", "plt", "signal", "end", "none", "unsupported"};
  std::string text = "pc " + to_hex(row.pc) + " " + (row.cfa_kind < std::size(kKinds) ? kKinds[row.cfa_kind] : "?") +
                     " cfa " + std::to_string(row.cfa_offset) + " ra " + std::to_string(row.ra_offset);
  text += row.rbp_kind == XREF_RBP_SAME ? " rbp same" : row.rbp_kind == XREF_RBP_AT_CFA ? " rbp at " : " rbp unsupported";
  if (row.rbp_kind != XREF_RBP_UNSUPPORTED) text += " " + std::to_string(row.rbp_offset);
  return text;
}

bool same_row(const xref_unwind_row& a, const xref_unwind_row& b) {
  return a.pc == b.pc && a.cfa_kind == b.cfa_kind && a.rbp_kind == b.rbp_kind && a.rbp_offset == b.rbp_offset &&
         a.cfa_offset == b.cfa_offset && a.ra_offset == b.ra_offset;
}

xref_unwind_row kind_row(uint8_t kind) {
  xref_unwind_row row{};
  row.cfa_kind = kind;
  return row;
}

// ---------------------------------------------------------------------------
// readelf's rows as unwind rows, by the rules cfi_table.h states.

// "c-16" -> -16 (readelf's "saved at cfa+N").
std::optional<int64_t> cfa_offset_rule(const std::string& rule) {
  static const std::regex kOffset(R"(c([+-]\d+))");
  std::smatch match;
  if (!std::regex_match(rule, match, kOffset)) return std::nullopt;
  return std::stoll(match[1]);
}

// "DW_OP_breg7 (rsp): 120" -> 120.
std::optional<int64_t> rsp_expression(const std::string& expression) {
  static const std::regex kRsp(R"(DW_OP_breg7 \(rsp\): (-?\d+))");
  std::smatch match;
  if (!std::regex_match(expression, match, kRsp)) return std::nullopt;
  return std::stoll(match[1]);
}

std::string rule_of(const ReadelfFrameRow& row, const std::string& column) {
  const auto found = row.rules.find(column);
  return found == row.rules.end() ? "" : found->second;
}

xref_unwind_row expected_rule(const ReadelfFrameFde& fde, const ReadelfFrameRow& row) {
  const std::string ra = rule_of(row, "ra");
  const std::string rbp = rule_of(row, "rbp");
  if (ra == "u") return kind_row(XREF_CFA_END);
  const bool signal_frame = fde.augmentation.find('S') != std::string::npos;
  if (row.cfa == "exp") {
    EXPECT_EQ(fde.cfa_expressions, 1u) << "FDE " << to_hex(fde.start) << ": the test reads one CFA expression per FDE";
    if (signal_frame) {
      static const std::regex kDeref(R"(DW_OP_breg7 \(rsp\): (-?\d+); DW_OP_deref)");
      std::smatch match;
      const auto rip = fde.register_expressions.find("rip");
      const auto saved_rbp = fde.register_expressions.find("rbp");
      if (!std::regex_match(fde.cfa_expression, match, kDeref) || ra != "exp" || rbp != "exp" ||
          rip == fde.register_expressions.end() || saved_rbp == fde.register_expressions.end() ||
          !rsp_expression(rip->second) || !rsp_expression(saved_rbp->second)) {
        return kind_row(XREF_CFA_UNSUPPORTED);
      }
      xref_unwind_row signal{};
      signal.cfa_kind = XREF_CFA_SIGNAL;
      signal.cfa_offset = static_cast<int32_t>(std::stoll(match[1]));
      signal.ra_offset = static_cast<int32_t>(*rsp_expression(rip->second));
      signal.rbp_kind = XREF_RBP_AT_CFA;
      signal.rbp_offset = static_cast<int16_t>(*rsp_expression(saved_rbp->second));
      return signal;
    }
    static const std::regex kPlt(
        R"(DW_OP_breg7 \(rsp\): (-?\d+); DW_OP_breg16 \(rip\): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit(\d+); DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus)");
    std::smatch match;
    const auto ra_offset = cfa_offset_rule(ra);
    if (!std::regex_match(fde.cfa_expression, match, kPlt) || !ra_offset ||
        !(rbp.empty() || rbp == "s" || rbp == "u")) {
      return kind_row(XREF_CFA_UNSUPPORTED);
    }
    xref_unwind_row plt{};
    plt.cfa_kind = XREF_CFA_PLT;
    plt.cfa_offset = static_cast<int32_t>(std::stoll(match[1]));
    plt.ra_offset = static_cast<int32_t>(*ra_offset);
    plt.rbp_kind = XREF_RBP_SAME;
    plt.rbp_offset = static_cast<int16_t>(std::stoll(match[2]));
    return plt;
  }
  const auto ra_offset = cfa_offset_rule(ra);
  static const std::regex kRegisterPlus(R"((rsp|rbp)([+-]\d+))");
  std::smatch match;
  if (signal_frame || !ra_offset || !std::regex_match(row.cfa, match, kRegisterPlus)) {
    return kind_row(XREF_CFA_UNSUPPORTED);
  }
  xref_unwind_row result{};
  result.cfa_kind = match[1] == "rsp" ? XREF_CFA_RSP : XREF_CFA_RBP;
  result.cfa_offset = static_cast<int32_t>(std::stoll(match[2]));
  result.ra_offset = static_cast<int32_t>(*ra_offset);
  if (rbp.empty() || rbp == "s" || rbp == "u") {
    result.rbp_kind = XREF_RBP_SAME;
  } else if (const auto saved = cfa_offset_rule(rbp)) {
    result.rbp_kind = XREF_RBP_AT_CFA;
    result.rbp_offset = static_cast<int16_t>(*saved);
  } else {
    result.rbp_kind = XREF_RBP_UNSUPPORTED;
  }
  return result;
}

struct ExpectedTable {
  std::vector<xref_unwind_row> rows;
  size_t fdes = 0;
  size_t readelf_rows = 0;  // rows readelf printed that hold for at least one byte
};

// readelf's rows in pc order, each FDE cut at the next one's start, a NONE
// row after an FDE the next one does not continue, neighbours with the same
// rule merged: the table compile_cfi_table should give.
ExpectedTable expected_table(std::vector<ReadelfFrameFde> fdes, uint64_t origin) {
  std::erase_if(fdes, [](const ReadelfFrameFde& fde) { return fde.end <= fde.start; });
  std::stable_sort(fdes.begin(), fdes.end(), [](const ReadelfFrameFde& a, const ReadelfFrameFde& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  ExpectedTable table;
  const auto add = [&](uint64_t va, xref_unwind_row row) {
    row.pc = static_cast<uint32_t>(va - origin);
    if (!table.rows.empty()) {
      xref_unwind_row previous = table.rows.back();
      previous.pc = row.pc;
      if (same_row(previous, row)) return;
    }
    table.rows.push_back(row);
  };
  for (size_t i = 0; i < fdes.size(); ++i) {
    const ReadelfFrameFde& fde = fdes[i];
    const bool has_next = i + 1 < fdes.size();
    const uint64_t end = has_next ? std::min(fde.end, fdes[i + 1].start) : fde.end;
    if (end <= fde.start) continue;
    ++table.fdes;
    std::vector<ReadelfFrameRow> rows = {fde.initial};
    for (const ReadelfFrameRow& row : fde.rows) {
      if (row.location < fde.start || row.location >= end) continue;
      if (rows.back().location == row.location) rows.pop_back();  // superseded at the same location
      rows.push_back(row);
    }
    table.readelf_rows += rows.size();
    for (const ReadelfFrameRow& row : rows) add(row.location, expected_rule(fde, row));
    if (!has_next || fdes[i + 1].start != end) add(end, kind_row(XREF_CFA_NONE));
  }
  return table;
}

// ---------------------------------------------------------------------------
// The modules.

std::string module_path(const std::string& name) {
  if (name == "xref") return XREF_HELPER_BINARY;
  if (name.starts_with("/")) return name;
  return std::string(XREF_TARGETS_DIR) + "/" + name;
}

Result<CfiTable> compiled(const std::string& path) {
  static std::map<std::string, Result<CfiTable>> cache;
  auto found = cache.find(path);
  if (found == cache.end()) found = cache.emplace(path, compile_cfi_table(path)).first;
  return found->second;
}

class CfiTableReadelf : public ::testing::TestWithParam<const char*> {};

// The table, row for row, against readelf's rows of `section`.
void expect_readelf_rows(const std::string& path, const CfiTable& table, const std::string& section) {
  ASSERT_TRUE(try_command_lines("command -v readelf")) << "readelf not found in PATH: install binutils";
  EXPECT_EQ(table.source, section);
  EXPECT_EQ(table.skipped_fdes, 0u);
  const auto fdes = test::readelf_frame_fdes(path, section);
  ASSERT_FALSE(fdes.empty()) << "readelf found no FDEs in " << section << " of " << path;
  const ExpectedTable expected = expected_table(fdes, table.origin);
  EXPECT_EQ(table.fdes, expected.fdes);
  ASSERT_FALSE(expected.rows.empty());
  size_t failures = 0;
  for (size_t i = 0; i < std::max(expected.rows.size(), table.rows.size()); ++i) {
    const bool have_ours = i < table.rows.size();
    const bool have_theirs = i < expected.rows.size();
    if (have_ours && have_theirs && same_row(table.rows[i], expected.rows[i])) continue;
    if (++failures > 20) break;
    ADD_FAILURE() << path << " row " << i << ": readelf " << (have_theirs ? describe(expected.rows[i]) : "(none)")
                  << ", compile_cfi_table " << (have_ours ? describe(table.rows[i]) : "(none)") << " (origin "
                  << to_hex(table.origin) << ")";
  }
  EXPECT_EQ(table.rows.size(), expected.rows.size());
  EXPECT_EQ(failures, 0u);
  // Before merging: one libdw row per readelf row, and a NONE row per gap.
  const size_t none_rows = std::count_if(table.rows.begin(), table.rows.end(),
                                         [](const xref_unwind_row& row) { return row.cfa_kind == XREF_CFA_NONE; });
  EXPECT_EQ(table.merged_rows + table.rows.size(), expected.readelf_rows + none_rows) << "rows libdw gave";
  std::cout << "[ readelf  ] " << path << ": " << expected.fdes << " FDEs, " << expected.readelf_rows
            << " readelf rows, " << table.rows.size() << " table rows (" << table.merged_rows << " merged; "
            << table.plt_rows << " plt, " << table.signal_rows << " signal, " << table.end_rows << " end, "
            << none_rows << " none, " << table.unsupported_rows << " unsupported)\n";
}

TEST_P(CfiTableReadelf, EveryRowMatchesReadelf) {
  const std::string path = module_path(GetParam());
  ASSERT_TRUE(std::ifstream(path).good())
      << path << " does not exist: build everything first (cmake --build build), xref and the targets included";
  const auto table = compiled(path);
  ASSERT_TRUE(table) << table.error().message;
  expect_readelf_rows(path, *table, ".eh_frame");
}

// Every row's CFA against cfa_rule_at (the project's own .eh_frame reader),
// where that one has a rule: expressions (PLT, signal) it refuses, END rows
// hide the CFA, NONE rows it must find no FDE for.
TEST_P(CfiTableReadelf, CfaAgreesWithCfaRuleAt) {
  const std::string path = module_path(GetParam());
  const auto table = compiled(path);
  ASSERT_TRUE(table) << table.error().message;
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  size_t agree = 0, disagree = 0, expressions = 0, end_rows = 0, not_compared = 0;
  for (const xref_unwind_row& row : table->rows) {
    const uint64_t va = table->origin + row.pc;
    const auto rule = cfa_rule_at(*image, va);
    bool same = false;
    switch (row.cfa_kind) {
      case XREF_CFA_END:
        ++end_rows;
        continue;
      case XREF_CFA_NONE:
        same = !rule && rule.error().code == ErrorCode::address_unmapped;
        break;
      case XREF_CFA_PLT:
      case XREF_CFA_SIGNAL:
        same = !rule && rule.error().code == ErrorCode::unsupported;
        expressions += same;
        break;
      case XREF_CFA_UNSUPPORTED:
        // Another register or an expression: cfa_rule_at says so too. A
        // plain CFA with a return-address rule this table cannot follow is
        // not a CFA either reader disputes.
        if (rule && rule->reg != CfaRule::Register::other) {
          ++not_compared;
          continue;
        }
        same = rule ? true : rule.error().code == ErrorCode::unsupported;
        expressions += !rule && same;
        break;
      default:
        same = rule && rule->offset == row.cfa_offset &&
               rule->reg == (row.cfa_kind == XREF_CFA_RSP ? CfaRule::Register::rsp : CfaRule::Register::rbp);
    }
    if (same) {
      ++agree;
    } else if (++disagree <= 20) {
      ADD_FAILURE() << path << " " << to_hex(va) << ": compile_cfi_table " << describe(row) << ", cfa_rule_at "
                    << (rule ? to_string(*rule) : rule.error().message);
    }
  }
  EXPECT_EQ(disagree, 0u);
  EXPECT_GT(agree, 0u);
  std::cout << "[ cfa_rule ] " << GetParam() << ": " << agree << " rows agree (" << expressions
            << " expressions cfa_rule_at refuses), " << disagree << " disagree, " << end_rows
            << " END rows and " << not_compared << " unsupported return-address rules not compared\n";
}

INSTANTIATE_TEST_SUITE_P(Modules, CfiTableReadelf,
                         ::testing::Values("watch_target", "watch_target_clang", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "xref"),
                         [](const auto& test_case) { return test::binary_test_name(test_case.param); });

// ---------------------------------------------------------------------------
// Known shapes.

const xref_unwind_row& row_at(const CfiTable& table, uint64_t va) {
  static const xref_unwind_row kNoRow = kind_row(0);
  const xref_unwind_row* row = cfi_row_at(table, va);
  return row != nullptr ? *row : kNoRow;
}

// The first occurrence of `pattern` in the image's executable segments.
std::optional<uint64_t> find_code(const ElfImage& image, const std::vector<uint8_t>& pattern) {
  for (const LoadSegment& segment : image.segments()) {
    if (!segment.executable()) continue;
    const auto bytes = image.bytes_at(segment.vaddr, segment.filesz);
    if (!bytes) continue;
    const auto found = std::search(bytes->begin(), bytes->end(), pattern.begin(), pattern.end());
    if (found != bytes->end()) return segment.vaddr + (found - bytes->begin());
  }
  return std::nullopt;
}

// ld's .plt: PLT0 (push; jmp) then 16-byte entries whose CFA grows by 8
// once the entry pushed its index, at byte 11.
TEST(CfiTable, PltStubsOfBothCompilers) {
  for (const char* name : {"watch_target", "watch_target_clang"}) {
    const std::string path = module_path(name);
    const auto table = compiled(path);
    ASSERT_TRUE(table) << table.error().message;
    auto image = ElfImage::open(path);
    ASSERT_TRUE(image) << image.error().message;
    const SectionInfo* plt = image->section(".plt");
    ASSERT_NE(plt, nullptr) << name;
    ASSERT_GE(plt->size, 48u) << name;
    EXPECT_EQ(row_at(*table, plt->addr).cfa_kind, XREF_CFA_RSP) << name;
    EXPECT_EQ(row_at(*table, plt->addr).cfa_offset, 16) << name;  // PLT0 is entered with the index pushed
    const xref_unwind_row& entry = row_at(*table, plt->addr + 16);
    EXPECT_EQ(entry.cfa_kind, XREF_CFA_PLT) << name << ": " << describe(entry);
    EXPECT_EQ(entry.cfa_offset, 8) << name;
    EXPECT_EQ(entry.rbp_offset, 11) << name;
    EXPECT_EQ(entry.ra_offset, -8) << name;
    EXPECT_EQ(&row_at(*table, plt->addr + plt->size - 1), &entry) << name << ": one row for every entry";
    EXPECT_GE(table->plt_rows, 1u);
    // ld gives .plt.got an FDE of its own; the bytes after it, up to the
    // first function of .text, have none.
    const SectionInfo* plt_got = image->section(".plt.got");
    ASSERT_NE(plt_got, nullptr) << name;
    EXPECT_EQ(row_at(*table, plt_got->addr).cfa_kind, XREF_CFA_RSP) << name;
    const uint64_t after = plt_got->addr + plt_got->size;
    EXPECT_EQ(row_at(*table, after).cfa_kind, XREF_CFA_NONE) << name << " at " << to_hex(after);
    const auto rule = cfa_rule_at(*image, after);
    EXPECT_TRUE(!rule && rule.error().code == ErrorCode::address_unmapped) << name << ": an FDE covers " << to_hex(after);
    // Code before the first FDE (.init) has no row at all.
    if (const SectionInfo* init = image->section(".init")) {
      EXPECT_EQ(cfi_row_at(*table, init->addr), nullptr) << name;
    }
  }
}

// _start's CFI says the return address is undefined: the outermost frame.
TEST(CfiTable, StartIsTheEnd) {
  for (const char* name : {"watch_target", "watch_target_clang", "xref"}) {
    const std::string path = module_path(name);
    const auto table = compiled(path);
    ASSERT_TRUE(table) << table.error().message;
    auto image = ElfImage::open(path);
    ASSERT_TRUE(image) << image.error().message;
    EXPECT_EQ(row_at(*table, image->entry()).cfa_kind, XREF_CFA_END) << name << " at _start " << to_hex(image->entry());
  }
}

constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

// glibc's __restore_rt (mov $15, %rax; syscall: rt_sigreturn) has the one
// FDE with the 'S' augmentation; it starts a byte early, and reads the
// interrupted rsp, rip and rbp from the ucontext's gregs at rsp + 40 +
// 8 * REG_RSP (15), REG_RIP (16), REG_RBP (10).
TEST(CfiTable, LibcSignalTrampoline) {
  const auto table = compiled(kLibc);
  ASSERT_TRUE(table) << table.error().message;
  auto image = ElfImage::open(kLibc);
  ASSERT_TRUE(image) << image.error().message;
  const auto restore_rt = find_code(*image, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  ASSERT_TRUE(restore_rt) << "no mov $15,%rax; syscall in libc";
  const xref_unwind_row& row = row_at(*table, *restore_rt);
  EXPECT_EQ(row.cfa_kind, XREF_CFA_SIGNAL) << describe(row);
  EXPECT_EQ(row.pc, *restore_rt - 1 - table->origin) << "the FDE starts one byte before __restore_rt";
  EXPECT_EQ(row.cfa_offset, 160);
  EXPECT_EQ(row.ra_offset, 168);
  EXPECT_EQ(row.rbp_kind, XREF_RBP_AT_CFA);
  EXPECT_EQ(row.rbp_offset, 120);
  EXPECT_EQ(table->signal_rows, 1u);
}

// Threads start in __clone3's child (mov $435, %eax; syscall; ...), whose
// CFI marks the return address undefined; so does __clone's child.
TEST(CfiTable, LibcThreadStartsAreTheEnd) {
  const auto table = compiled(kLibc);
  ASSERT_TRUE(table) << table.error().message;
  auto image = ElfImage::open(kLibc);
  ASSERT_TRUE(image) << image.error().message;
  const auto clone3 = find_code(*image, {0xb8, 0xb3, 0x01, 0x00, 0x00, 0x0f, 0x05});
  ASSERT_TRUE(clone3) << "no mov $435,%eax; syscall in libc";
  const auto first_end = std::find_if(table->rows.begin(), table->rows.end(), [&](const xref_unwind_row& row) {
    return row.cfa_kind == XREF_CFA_END && table->origin + row.pc > *clone3;
  });
  ASSERT_NE(first_end, table->rows.end());
  EXPECT_LT(table->origin + first_end->pc - *clone3, 16u) << "the child's END row follows the syscall";
  const auto clone = image->find_functions("__clone");
  ASSERT_EQ(clone.size(), 1u);
  size_t in_clone = 0;
  for (const xref_unwind_row& row : table->rows) {
    in_clone += row.cfa_kind == XREF_CFA_END && clone[0]->contains(table->origin + row.pc);
  }
  EXPECT_EQ(in_clone, 1u);
  EXPECT_EQ(table->end_rows, 2u);
}

// An image already open (by descriptor, as the capture opens a target's
// modules) gives the table its path gives.
TEST(CfiTable, OpenImageGivesTheSameTable) {
  const std::string path = module_path("watch_target_clang");
  const auto by_path = compiled(path);
  ASSERT_TRUE(by_path) << by_path.error().message;
  auto image = ElfImage::open_descriptor(UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), "the clang target");
  ASSERT_TRUE(image) << image.error().message;
  const auto by_image = compile_cfi_table(*image);
  ASSERT_TRUE(by_image) << by_image.error().message;
  EXPECT_EQ(by_image->origin, by_path->origin);
  ASSERT_EQ(by_image->rows.size(), by_path->rows.size());
  for (size_t i = 0; i < by_path->rows.size(); ++i) {
    EXPECT_TRUE(same_row(by_image->rows[i], by_path->rows[i])) << describe(by_image->rows[i]);
  }
}

// A scratch directory for programs built by a test, removed at the end.
struct ScratchDir {
  std::string path = ::testing::TempDir() + "xref_cfi_table_XXXXXX";
  bool made = mkdtemp(path.data()) != nullptr;
  ~ScratchDir() {
    if (made) std::filesystem::remove_all(path);
  }
};

// Compiles `source` with `command` (a compiler and its flags) into
// dir/name; returns the path, empty on failure.
std::string build_program(const ScratchDir& dir, const std::string& name, const std::string& source,
                          const std::string& command) {
  std::ofstream(dir.path + "/" + name + ".c") << source;
  const std::string output = dir.path + "/" + name;
  if (!try_command_lines(command + " -o '" + output + "' '" + output + ".c' 2>&1")) return {};
  return output;
}

constexpr const char* kCallsLibc =
    "#include <stdio.h>\n#include <stdlib.h>\n"
    "int main(int argc, char** argv) { printf(\"%d\\n\", atoi(argv[argc - 1])); puts(argv[0]); return 0; }\n";

// ld's other PLT layouts: -z now keeps the lazy .plt's rule (threshold
// 11); with IBT (-fcf-protection -z ibtplt) each .plt entry starts with
// endbr64, so the push ends at byte 9, and the calls go through .plt.sec.
TEST(CfiTable, PltThresholdOfEachLinkerLayout) {
  ASSERT_TRUE(try_command_lines("command -v gcc")) << "no gcc in PATH";
  ScratchDir dir;
  ASSERT_TRUE(dir.made) << dir.path;
  struct Layout {
    const char* name;
    const char* flags;
    int16_t threshold;
  };
  for (const Layout& layout : {Layout{"bind_now", "-Wl,-z,now", 11}, Layout{"ibt", "-fcf-protection -Wl,-z,ibtplt", 9}}) {
    const std::string path = build_program(dir, layout.name, kCallsLibc, std::string("gcc -O2 ") + layout.flags);
    ASSERT_FALSE(path.empty()) << "gcc " << layout.flags << " failed";
    const auto table = compile_cfi_table(path);
    ASSERT_TRUE(table) << table.error().message;
    expect_readelf_rows(path, *table, ".eh_frame");
    auto image = ElfImage::open(path);
    ASSERT_TRUE(image) << image.error().message;
    const SectionInfo* plt = image->section(".plt");
    ASSERT_NE(plt, nullptr) << layout.name;
    const xref_unwind_row& entry = row_at(*table, plt->addr + 16);
    EXPECT_EQ(entry.cfa_kind, XREF_CFA_PLT) << layout.name << ": " << describe(entry);
    EXPECT_EQ(entry.cfa_offset, 8) << layout.name;
    EXPECT_EQ(entry.rbp_offset, layout.threshold) << layout.name;
  }
}

// Built with -fno-asynchronous-unwind-tables -g, a module's only CFI is
// .debug_frame (its .eh_frame is empty): the table comes from there.
TEST(CfiTable, DebugFrameWhenNoEhFrame) {
  ASSERT_TRUE(try_command_lines("command -v gcc")) << "no gcc in PATH";
  ScratchDir dir;
  ASSERT_TRUE(dir.made) << dir.path;
  const std::string path =
      build_program(dir, "debug_frame.so",
                    "volatile long sink;\n"
                    "long g(long x) { sink = x; return x * 3; }\n"
                    "long f(long x) { long a[8]; for (int i = 0; i < 8; i++) a[i] = g(x + i); return a[3] + g(a[5]); }\n",
                    "gcc -O2 -g -fPIC -fno-asynchronous-unwind-tables -shared -nostdlib");
  ASSERT_FALSE(path.empty()) << "gcc -fno-asynchronous-unwind-tables failed";
  const auto table = compile_cfi_table(path);
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(table->fdes, 2u);
  expect_readelf_rows(path, *table, ".debug_frame");
}

// A module without CFI: no rows, no error; a file that is not ELF, one
// that does not exist, and damaged call-frame instructions: errors.
TEST(CfiTable, NoCfiAndBadFiles) {
  ASSERT_TRUE(try_command_lines("command -v gcc")) << "no gcc in PATH";
  ScratchDir dir;
  ASSERT_TRUE(dir.made) << dir.path;
  const std::string nocfi = build_program(dir, "nocfi.so", "int f(int x) { return x + 1; }\n",
                                          "gcc -O2 -shared -nostdlib -fno-asynchronous-unwind-tables");
  ASSERT_FALSE(nocfi.empty());
  const auto none = compile_cfi_table(nocfi);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->rows.empty());
  EXPECT_EQ(none->source, "");

  std::ofstream(dir.path + "/text") << "not an ELF file, but long enough to hold an ELF header's sixty-four bytes.\n";
  const auto text = compile_cfi_table(dir.path + "/text");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ErrorCode::elf_error) << text.error().message;
  const auto missing = compile_cfi_table(dir.path + "/missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error) << missing.error().message;

  // The first instruction of an FDE replaced by 0x17, no DW_CFA opcode.
  const std::string original = module_path("watch_target");
  const std::string damaged = dir.path + "/damaged";
  std::filesystem::copy_file(original, damaged);
  auto image = ElfImage::open(original);
  ASSERT_TRUE(image) << image.error().message;
  const SectionInfo* eh_frame = image->section(".eh_frame");
  ASSERT_TRUE(eh_frame != nullptr && image->eh_frame() != nullptr);
  const auto fde = std::find_if(image->eh_frame()->fdes.begin(), image->eh_frame()->fdes.end(),
                                [](const EhFrameFde& candidate) {
                                  return candidate.range.size > 0 && candidate.instructions_end > candidate.instructions_begin;
                                });
  ASSERT_NE(fde, image->eh_frame()->fdes.end());
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(eh_frame->offset + fde->instructions_begin));
    file.put(0x17);
  }
  const auto bad = compile_cfi_table(damaged);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::elf_error) << bad.error().message;
  EXPECT_NE(bad.error().message.find(damaged), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find(to_hex(fde->range.start)), std::string::npos) << bad.error().message;
}

// A module whose executable segments lie more than 4 GiB apart: row pcs
// would not fit in 32 bits, so it is refused (its last PT_LOAD made
// executable and moved 8 GiB up in a copy).
TEST(CfiTable, ExecutableSpanOver4GiBIsRefused) {
  ScratchDir dir;
  ASSERT_TRUE(dir.made) << dir.path;
  const std::string copy = dir.path + "/far";
  std::filesystem::copy_file(module_path("watch_target"), copy);
  std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
  Elf64_Ehdr header{};
  ASSERT_TRUE(file.read(reinterpret_cast<char*>(&header), sizeof header));
  std::optional<std::streamoff> last_load;
  for (unsigned index = 0; index < header.e_phnum; ++index) {
    const std::streamoff at = static_cast<std::streamoff>(header.e_phoff + index * sizeof(Elf64_Phdr));
    Elf64_Phdr segment{};
    file.seekg(at);
    ASSERT_TRUE(file.read(reinterpret_cast<char*>(&segment), sizeof segment));
    if (segment.p_type == PT_LOAD) last_load = at;
  }
  ASSERT_TRUE(last_load);
  Elf64_Phdr segment{};
  file.seekg(*last_load);
  file.read(reinterpret_cast<char*>(&segment), sizeof segment);
  segment.p_flags |= PF_X;
  segment.p_vaddr += uint64_t{1} << 33;
  segment.p_paddr = segment.p_vaddr;
  file.seekp(*last_load);
  file.write(reinterpret_cast<const char*>(&segment), sizeof segment);
  file.close();
  const auto far = compile_cfi_table(copy);
  ASSERT_FALSE(far);
  EXPECT_EQ(far.error().code, ErrorCode::limit_exceeded) << far.error().message;
  EXPECT_NE(far.error().message.find("4 GiB"), std::string::npos) << far.error().message;
}

}  // namespace
}  // namespace xref
