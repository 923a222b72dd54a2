// The hw engine's writers on a live process: a trap pc (a live address) ->
// the live address of the instruction before it, through the process's
// mappings, for every store objdump shows in the target's own code (gcc and
// clang -O2, PIE). A pc whose writer cannot be told becomes a warning.
#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "command_output.h"
#include "objdump_stores.h"
#include "target_process.h"
#include "watch/trap_writers.h"

namespace xref {
namespace {

// live - static, from the address the target prints of `words` and nm's.
uint64_t load_bias(const test::TargetProcess& target, const std::string& path) {
  for (const std::string& line : test::command_lines("nm " + path)) {
    if (line.size() > 19 && line.substr(17) == "B words") {
      return target.value("obj", "words") - std::stoull(line.substr(0, 16), nullptr, 16);
    }
  }
  throw std::runtime_error("nm shows no words in " + path);
}

TEST(TrapWriters, EveryStoreOfTheTargetIsTheWriterOfTheTrapAfterIt) {
  for (const char* compiler : {"gcc", "clang"}) {
    const std::string path = std::string(XREF_TARGETS_DIR) + "/hw_threads_target-" + compiler;
    test::TargetProcess target({path, "--threads", "1"});
    const uint64_t bias = load_bias(target, path);
    ASSERT_NE(bias, 0u) << "a PIE target is loaded away from its static addresses";
    const auto lines = test::objdump_intel(path);
    TrapWriters writers(target.pid());
    size_t checked = 0;
    for (auto line = lines.begin(); line != lines.end(); ++line) {
      const auto next = std::next(line);
      // The writes to the watched words: lock add (gcc), lock inc (clang).
      if (next == lines.end() || !test::objdump_is_store(line->second) || line->second.prefixes.empty() ||
          line->second.prefixes.front() != "lock") {
        continue;
      }
      EXPECT_EQ(writers.writer_of(bias + next->first), bias + line->first) << path << " 0x" << std::hex << line->first;
      ++checked;
    }
    EXPECT_GE(checked, 2u) << path;
    EXPECT_TRUE(writers.warnings().empty()) << writers.warnings().front();

    // A trap at a function's start: no writer, and a warning saying why, once per pc.
    uint64_t late = 0;
    for (const std::string& line : test::command_lines("nm " + path)) {
      if (line.size() > 19 && line.substr(17) == "t late") late = std::stoull(line.substr(0, 16), nullptr, 16);
    }
    ASSERT_NE(late, 0u) << path;
    EXPECT_EQ(writers.writer_of(bias + late), 0u);
    EXPECT_EQ(writers.writer_of(bias + late), 0u);
    ASSERT_EQ(writers.warnings().size(), 1u);
    char expected[160];
    std::snprintf(expected, sizeof expected, "2 traps at 0x%llx (late+0x0): writer unknown, ",
                  static_cast<unsigned long long>(bias + late));
    EXPECT_EQ(writers.warnings().front(),
              std::string(expected) + "the trap pc starts the function: a call wrote (its return address)");
  }
}

}  // namespace
}  // namespace xref
