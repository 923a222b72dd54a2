// Capstone and Zydis against each other on real code: every function of
// the system's libc, libm, libstdc++ and libcrypto (from their symbol
// tables and their .eh_frame FDE ranges) swept instruction by instruction
// with Zydis, and at each instruction Capstone asked too. Where both decode,
// they must agree on what xref reads (length, call/jump/ret kind, direct
// target, rip-relative slot); every byte must decode, and the sweep xref
// uses (disassemble_function) must leave no gap. Debian's Capstone 4 cannot
// decode glibc's *_evex string functions, which this CPU may bind.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "disassembly.h"
#include "elf_image.h"
#include "hex.h"
#include "x86_decoder.h"

namespace xref {
namespace {

struct CodeRange {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
};

struct Counts {
  size_t ranges = 0;
  size_t instructions = 0;
  size_t both = 0;          // decoded by both decoders, and compared
  size_t zydis_only = 0;    // Capstone 4 cannot decode them
  size_t undecodable = 0;   // neither
  size_t disagreements = 0;
  size_t sweep_gaps = 0;    // bytes disassemble_function could not decode
};

// Every function of the image: its symbols with a size, and every FDE range.
std::vector<CodeRange> code_ranges(const ElfImage& image) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  std::vector<CodeRange> ranges;
  for (const FunctionSymbol* function : image.all_functions()) {
    if (function->size == 0 || !seen.emplace(function->start, function->size).second) continue;
    ranges.push_back({function->start, function->size, function->name});
  }
  if (const EhFrame* frame = image.eh_frame()) {
    for (const EhFrameFde& fde : frame->fdes) {
      if (fde.range.size == 0 || !seen.emplace(fde.range.start, fde.range.size).second) continue;
      ranges.push_back({fde.range.start, fde.range.size, "fde_" + to_hex(fde.range.start)});
    }
  }
  return ranges;
}

std::string describe(const DecodedInstruction& instruction) {
  std::string text = std::to_string(instruction.size) + " bytes, " + instruction_kind_name(instruction.kind) + " '" +
                     instruction.text + "'";
  if (instruction.kind == InstructionKind::call || instruction.kind == InstructionKind::jump ||
      instruction.kind == InstructionKind::conditional_jump) {
    text += std::string(", target ") + operand_kind_name(instruction.target.kind) + " " + to_hex(instruction.target.va);
  }
  return text;
}

bool agree(const DecodedInstruction& a, const DecodedInstruction& b) {
  if (a.size != b.size || a.kind != b.kind) return false;
  if (a.kind != InstructionKind::call && a.kind != InstructionKind::jump &&
      a.kind != InstructionKind::conditional_jump) {
    return true;
  }
  return a.target.kind == b.target.kind && a.target.va == b.target.va;
}

void sweep_library(const std::string& path) {
  SCOPED_TRACE(path);
  auto image = ElfImage::open(path);
  ASSERT_TRUE(image) << image.error().message;
  const CapstoneDecoder capstone;
  const ZydisX86Decoder zydis;
  ASSERT_EQ(capstone.failure(), "");
  ASSERT_EQ(zydis.failure(), "");

  Counts counts;
  std::vector<std::string> failures;  // the first few, printed
  auto fail = [&](std::string what) {
    if (failures.size() < 20) failures.push_back(std::move(what));
  };
  for (const CodeRange& range : code_ranges(*image)) {
    const auto bytes = image->bytes_at(range.start, range.size);
    if (!bytes) {
      fail(range.name + " [" + to_hex(range.start) + ", +" + std::to_string(range.size) + ") is not file-backed");
      continue;
    }
    ++counts.ranges;
    for (size_t offset = 0; offset < bytes->size();) {
      const uint64_t va = range.start + offset;
      const auto rest = bytes->subspan(offset);
      const auto by_zydis = zydis.decode(rest, va);
      const auto by_capstone = capstone.decode(rest, va);
      if (!by_zydis) {
        ++counts.undecodable;
        fail(range.name + "+" + to_hex(offset) + " (" + to_hex(va) + "): Zydis cannot decode it" +
             (by_capstone ? ", Capstone reads " + describe(*by_capstone) : ""));
        ++offset;
        continue;
      }
      ++counts.instructions;
      if (!by_capstone) {
        ++counts.zydis_only;
      } else {
        ++counts.both;
        if (!agree(*by_zydis, *by_capstone)) {
          ++counts.disagreements;
          fail(range.name + "+" + to_hex(offset) + " (" + to_hex(va) + "): Zydis reads " + describe(*by_zydis) +
               ", Capstone " + describe(*by_capstone));
        }
      }
      offset += by_zydis->size;
    }
    auto swept = disassemble_function(*bytes, range.start);
    ASSERT_TRUE(swept) << swept.error().message;
    for (const ByteRange& gap : swept->decode_gaps) {
      counts.sweep_gaps += gap.size;
      fail(range.name + ": disassemble_function left " + std::to_string(gap.size) + " undecodable byte(s) at " +
           to_hex(gap.va));
    }
  }
  std::printf("%s: %zu functions and FDE ranges, %zu instructions: %zu decoded by both (%zu disagree), %zu by "
              "Zydis only (Capstone 4 cannot), %zu undecodable, %zu gap bytes in xref's sweep\n",
              path.c_str(), counts.ranges, counts.instructions, counts.both, counts.disagreements, counts.zydis_only,
              counts.undecodable, counts.sweep_gaps);
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  EXPECT_GT(counts.ranges, 100u);
  EXPECT_EQ(counts.disagreements, 0u);
  EXPECT_EQ(counts.undecodable, 0u);
  EXPECT_EQ(counts.sweep_gaps, 0u);
}

TEST(DecoderAgreement, Libc) { sweep_library("/lib/x86_64-linux-gnu/libc.so.6"); }
TEST(DecoderAgreement, Libm) { sweep_library("/lib/x86_64-linux-gnu/libm.so.6"); }
TEST(DecoderAgreement, Libstdcxx) { sweep_library("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"); }
TEST(DecoderAgreement, Libcrypto) { sweep_library("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"); }

}  // namespace
}  // namespace xref
