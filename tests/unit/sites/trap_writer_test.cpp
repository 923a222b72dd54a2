// The writer of a debug-register trap: the instruction ending at the trap
// pc, decoded from its function's start. Ground truth from objdump: for
// every instruction objdump shows writing memory (tests/support/
// objdump_stores.h decides that from its Intel listing, independently of
// xref's decoders) in gcc and clang -O2 builds and in Debian's libz, a trap
// right after it names it. And where it cannot say: a function start, a
// branch target after an instruction that writes nothing, the middle of an
// instruction.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <string>

#include "elf_image.h"
#include "objdump_stores.h"
#include "sites/trap_writer.h"

namespace xref {
namespace {

using test::ObjdumpIntelLine;

ElfImage open_image(const std::string& path) {
  auto image = ElfImage::open(path);
  if (!image) throw std::runtime_error(path + ": " + image.error().message);
  return std::move(image).value();
}

// Direct branch targets objdump prints ("jne 1234 <f+0x20>"), and the
// functions holding an indirect jump (a jump table's targets are unknown).
struct Branches {
  std::set<uint64_t> targets;
  std::set<uint64_t> functions_with_indirect_jumps;  // FunctionSymbol::start
};

Branches branches_of(const ElfImage& image, const std::map<uint64_t, ObjdumpIntelLine>& lines) {
  Branches branches;
  for (const auto& [address, line] : lines) {
    if (line.mnemonic.empty() || line.mnemonic[0] != 'j') continue;
    if (line.operands.find('[') != std::string::npos || line.operands.rfind("r", 0) == 0) {
      if (const FunctionSymbol* function = image.function_containing(address)) {
        branches.functions_with_indirect_jumps.insert(function->start);
      }
      continue;
    }
    branches.targets.insert(std::stoull(line.operands, nullptr, 16));
  }
  return branches;
}

// For every store objdump shows in a function the image knows (a call
// excepted: its write traps at the callee's start), the trap right after it
// names it. Returns how many were checked.
size_t expect_every_store_found(const std::string& path) {
  const ElfImage image = open_image(path);
  const auto lines = test::objdump_intel(path);
  size_t checked = 0;
  for (auto line = lines.begin(); line != lines.end(); ++line) {
    const auto next = std::next(line);
    if (next == lines.end() || !test::objdump_is_store(line->second)) continue;
    if (test::starts_with_word(line->second.mnemonic, "call")) continue;
    if (image.function_containing(line->first) == nullptr) continue;  // .plt, _start's neighbours
    const uint64_t pc = next->first;
    const TrapWriter writer = trap_writer(image, pc);
    EXPECT_EQ(writer.status, TrapWriterStatus::found)
        << path << ": trap at 0x" << path << " " << std::hex << pc << " after " << line->second.mnemonic << " "
        << line->second.operands << ": " << trap_writer_status_name(writer.status) << ", " << writer.why;
    EXPECT_EQ(writer.va, line->first) << path << ": trap at 0x" << std::hex << pc << ": " << writer.text;
    EXPECT_EQ(writer.size, pc - line->first) << path << ": 0x" << std::hex << line->first;
    ++checked;
  }
  return checked;
}

TEST(TrapWriter, EveryStoreOfGccAndClangBuildsIsTheWriterOfTheTrapAfterIt) {
  for (const char* compiler : {"gcc", "clang"}) {
    const std::string path = std::string(XREF_TARGETS_DIR) + "/store_sites_target-" + compiler;
    EXPECT_GT(expect_every_store_found(path), 40u) << path;
  }
  EXPECT_GT(expect_every_store_found(XREF_TRACE_TARGET), 100u);
}

TEST(TrapWriter, EveryStoreOfDebiansLibzIsTheWriterOfTheTrapAfterIt) {
  // Stripped: its static functions are known by their FDE ranges only.
  EXPECT_GT(expect_every_store_found("/lib/x86_64-linux-gnu/libz.so.1"), 1000u);
}

struct CannotTell {
  size_t ambiguous = 0, not_a_store = 0, function_starts = 0, inside = 0;
};

// The cases where the instruction before the pc is not the writer, found in
// objdump's listing and checked against what it shows there.
void expect_says_why(const std::string& path, CannotTell& counts) {
  const ElfImage image = open_image(path);
  const auto lines = test::objdump_intel(path);
  const Branches branches = branches_of(image, lines);
  size_t& ambiguous = counts.ambiguous;
  size_t& not_a_store = counts.not_a_store;
  size_t& function_starts = counts.function_starts;
  size_t& inside = counts.inside;
  // Functions holding bytes objdump cannot decode ("(bad)": data kept in
  // the function, as store_sites_target's data-in-function cases do): what
  // follows such bytes in objdump's listing is no instruction of the code.
  std::set<uint64_t> with_data;
  for (const auto& [va, listed] : lines) {
    const FunctionSymbol* function = image.function_containing(va);
    if (function != nullptr && listed.mnemonic == "(bad)") with_data.insert(function->start);
  }
  for (auto line = lines.begin(); line != lines.end(); ++line) {
    const auto next = std::next(line);
    if (next == lines.end()) continue;
    const FunctionSymbol* function = image.function_containing(line->first);
    if (function == nullptr || image.function_containing(next->first) != function) continue;
    if (with_data.count(function->start) != 0) continue;
    const uint64_t pc = next->first;
    if (function->start == line->first && inside < 20 && pc - line->first > 1) {
      // The middle of the function's first instruction.
      const TrapWriter writer = trap_writer(image, line->first + 1);
      EXPECT_EQ(writer.status, TrapWriterStatus::not_a_boundary) << std::hex << line->first + 1;
      ++inside;
    }
    if (function->start == line->first && function_starts < 20) {
      const auto before = lines.find(line->first);
      const bool previous_store = before != lines.begin() && test::objdump_is_store(std::prev(before)->second) &&
                                  !test::starts_with_word(std::prev(before)->second.mnemonic, "call");
      if (!previous_store) {
        const TrapWriter writer = trap_writer(image, line->first);
        EXPECT_EQ(writer.status, TrapWriterStatus::function_start) << std::hex << line->first << " " << writer.why;
        EXPECT_EQ(writer.why, "the trap pc starts the function: a call wrote (its return address)");
        ++function_starts;
      }
    }
    if (test::objdump_is_store(line->second) || line->second.mnemonic.rfind("rep", 0) == 0 ||
        next->second.mnemonic.find("stos") != std::string::npos ||
        next->second.mnemonic.find("movs") != std::string::npos) {
      continue;
    }
    if (test::starts_with_word(line->second.mnemonic, "call") || test::starts_with_word(line->second.mnemonic, "j") ||
        test::starts_with_word(line->second.mnemonic, "ret")) {
      continue;
    }
    const TrapWriter writer = trap_writer(image, pc);
    const bool branch_target =
        branches.targets.count(pc) != 0 || branches.functions_with_indirect_jumps.count(function->start) != 0;
    EXPECT_EQ(writer.status, branch_target ? TrapWriterStatus::ambiguous : TrapWriterStatus::not_a_store)
        << path << " " << std::hex << pc << " after " << line->second.mnemonic << " " << line->second.operands << ": "
        << writer.why;
    EXPECT_EQ(writer.va, line->first) << std::hex << pc;
    if (branch_target) {
      EXPECT_EQ(writer.why, "the instruction before the trap pc writes no memory and the pc is a branch target");
      ++ambiguous;
    } else {
      EXPECT_EQ(writer.why, "the instruction before the trap pc writes no memory");
      ++not_a_store;
    }
  }
}

TEST(TrapWriter, SaysWhyWhereItCannotTell) {
  CannotTell counts;
  for (const char* compiler : {"gcc", "clang"}) {
    expect_says_why(std::string(XREF_TARGETS_DIR) + "/store_sites_target-" + compiler, counts);
  }
  expect_says_why(XREF_TRACE_TARGET, counts);
  EXPECT_GT(counts.ambiguous, 5u);
  EXPECT_GT(counts.not_a_store, 5u);
  EXPECT_GT(counts.function_starts, 5u);
  EXPECT_GT(counts.inside, 5u);
}

TEST(TrapWriter, NoFunctionOutsideTheImagesCode) {
  const ElfImage image = open_image(std::string(XREF_TARGETS_DIR) + "/store_sites_target-gcc");
  EXPECT_EQ(trap_writer(image, 0x10).status, TrapWriterStatus::no_function);
}

}  // namespace
}  // namespace xref
