// Which of the names at one address ElfImage gives a function, against perf
// on the same run: where libc (with libc6-dbg's debug file), libm, libz or
// python3 have several symbols at one start (`__clone3`, `clone3` and
// `__GI___clone3`; `free` and `cfree`), the function goes by the name perf
// prints, so that profiles, traces and probes name a frame as perf and gdb
// users know it.
//
// The peer: `perf record --call-graph dwarf` of Debian's python3 running
// tests/targets/python_profile_target.py in two threads (its frames run
// through the interpreter into libc, libm and libz, and start in clone3 or
// _start),
// then every frame perf named, at its address, named by ElfImage.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "elf_image.h"
#include "perf_profile.h"
#include "require.h"
#include "target_process.h"

namespace xref {
namespace {

// The executable files mapped by PID: file name -> path.
std::map<std::string, std::string> mapped_files(int pid) {
  std::map<std::string, std::string> files;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    files.emplace(path.substr(path.rfind('/') + 1), path);
  }
  return files;
}

std::string without_version(const std::string& name) {
  const size_t at = name.find('@');
  return at == std::string::npos || at == 0 ? name : name.substr(0, at);
}

TEST(ElfPerfNames, AliasesAtOneAddressAreNamedAsPerfNamesThem) {
  std::string perf_missing;
  XREF_REQUIRE(test::perf::available(perf_missing), perf_missing);
  // The workload twice, in the main thread and in a thread libc starts
  // (clone3): both roots are named. (It prints `ready` twice; the first
  // one lets the test go on.)
  const std::string workload = std::string(XREF_SOURCE_DIR) + "/tests/targets/python_profile_target.py";
  test::TargetProcess python({"/usr/bin/python3", "-c",
                              "import runpy, sys, threading\n"
                              "threading.Thread(target=runpy.run_path, args=(sys.argv[1],), daemon=True).start()\n"
                              "runpy.run_path(sys.argv[1])\n",
                              workload});
  const auto files = mapped_files(python.pid());
  test::perf::RecordOptions options;
  options.pid = python.pid();
  options.frequency = 999;
  options.seconds = 3;
  char work[] = "/tmp/xref-perf-names-XXXXXX";
  ASSERT_NE(mkdtemp(work), nullptr);
  const test::perf::Recording recording = test::perf::record(options, std::string(work) + "/perf");
  rmdir(work);
  python.stop();

  std::map<std::string, std::unique_ptr<ElfImage>> images;
  auto image_of = [&](const std::string& module) -> const ElfImage* {
    auto& image = images[module];
    if (!image) {
      auto found = files.find(module);
      if (found == files.end()) return nullptr;
      auto opened = ElfImage::open(found->second);
      if (!opened) return nullptr;
      image = std::make_unique<ElfImage>(std::move(*opened));
    }
    return image.get();
  };
  // perf's name -> ElfImage's, per (module, address); each address once.
  std::set<std::pair<std::string, uint64_t>> seen;
  size_t named = 0, unnamed = 0, with_aliases = 0;
  std::set<std::string> alias_examples;
  for (const auto& sample : recording.samples) {
    for (const auto& frame : sample.frames) {
      if (frame.module.empty() || frame.module[0] == '[' || !seen.insert({frame.module, frame.address}).second) continue;
      const ElfImage* image = image_of(frame.module);
      ASSERT_NE(image, nullptr) << frame.module << " is not mapped by the target";
      // perf prints a file's code by its offset in the file.
      const auto vas = image->vas_of_file_offset(frame.address);
      ASSERT_EQ(vas.size(), 1u) << frame.module << " offset 0x" << std::hex << frame.address;
      // A return address names its call (perf does the same), an address
      // past a function's last call instruction is still the function's.
      const FunctionSymbol* function = image->function_containing(vas[0]);
      if (function == nullptr || function->contains(vas[0]) == false) {
        const FunctionSymbol* before = image->function_containing(vas[0] - 1);
        if (before != nullptr) function = before;
      }
      if (frame.function == "[unknown]") {
        ++unnamed;
        EXPECT_TRUE(function == nullptr || function->is_fde_range())
            << frame.module << " 0x" << std::hex << vas[0] << ": perf knows no symbol, ElfImage names "
            << function->name;
        continue;
      }
      ++named;
      ASSERT_NE(function, nullptr) << frame.module << " 0x" << std::hex << vas[0] << " (" << frame.function << ")";
      EXPECT_EQ(without_version(function->demangled), frame.function)
          << frame.module << " 0x" << std::hex << vas[0] << ", aliases: " << function->aliases.size();
      if (!function->aliases.empty()) {
        ++with_aliases;
        alias_examples.insert(frame.function);
      }
    }
  }
  std::cout << recording.samples.size() << " samples; " << named << " named addresses (" << with_aliases
            << " in functions with aliases), " << unnamed << " [unknown]; with aliases:";
  for (const auto& name : alias_examples) std::cout << " " << name;
  std::cout << "\n";
  // What makes this test mean something: addresses of many functions, and
  // perf chose among aliases (11 such functions on 2026-12-06).
  ASSERT_GE(named, 50u);
  EXPECT_GE(with_aliases, 5u);
  EXPECT_EQ(alias_examples.count("clone3") + alias_examples.count("__libc_start_main"), 2u)
      << "the threads' and the main thread's roots in libc";
}

}  // namespace
}  // namespace xref
