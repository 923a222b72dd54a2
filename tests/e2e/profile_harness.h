// The profile truth tests' harness: profile_target (tests/targets/
// profile_target.c) started and stopped through its go, phase2 and stop
// files; and the checks of a profiler's stacks (folded, root first) against
// the target's own record: each leaf's share of the working threads' CPU,
// the paths to each leaf, and how many stacks reach the roots. The checks
// take folded stacks so that perf's (perf_profile.h) and xref's captures
// are judged by the same code.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command_output.h"
#include "folded_stacks.h"
#include "perf_profile.h"
#include "profile_target_record.h"
#include "require.h"
#include "target_process.h"

// Inside a TEST body: perf events and perf itself, required (require.h).
#define XREF_REQUIRE_PERF()                                           \
  do {                                                                \
    std::string perf_missing;                                         \
    XREF_REQUIRE(::xref::test::perf::available(perf_missing), perf_missing); \
  } while (0)

namespace xref::test {

namespace pt = profile_target;

// A build of profile_target by its file name (tests/targets/CMakeLists.txt:
// profile_target, profile_target_clang, _nopie, _clang_nopie, _fp,
// _clang_fp, _stripped, _clang_stripped).
inline std::string profile_target_binary(const std::string& build) {
  return std::string(XREF_TARGETS_DIR) + "/" + build;
}

// A fresh directory for one test's files, removed with its files at the end.
class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/xref-profile-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A running profile_target, waiting for go.
class ProfileTarget {
 public:
  ProfileTarget(const std::string& build, const std::vector<std::string>& args)
      : process_(command(build, args)) {}

  pid_t pid() const { return process_.pid(); }
  const TargetProcess& process() const { return process_; }
  // The live address of a function the target printed (`func NAME 0xADDR`).
  uint64_t function_address(const std::string& name) const { return process_.value("func", name); }
  // TID of a thread by name (pt-main, pt-worker0, ...), from the startup lines.
  int tid(const std::string& name) const {
    for (const auto& line : process_.lines()) {
      std::istringstream words(line);
      std::string kind, thread;
      int tid = 0;
      if ((words >> kind >> thread >> tid) && kind == "thread" && thread == name) return tid;
    }
    throw std::runtime_error("profile_target printed no thread " + name);
  }

  void go() const { touch(scratch_.file("go")); }
  void phase2() const { touch(scratch_.file("phase2")); }
  // Stops the target, waits for its exit (status 0), reads its record.
  const pt::Record& finish() {
    touch(scratch_.file("stop"));
    const int status = process_.wait_exit();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("profile_target did not exit 0 (wait status " + std::to_string(status) + ")");
    }
    record_ = pt::read_record(scratch_.file("record"));
    return record_;
  }
  const pt::Record& record() const { return record_; }
  std::string scratch_file(const std::string& name) const { return scratch_.file(name); }

 private:
  std::vector<std::string> command(const std::string& build, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {profile_target_binary(build), "--go",     scratch_.file("go"),
                                     "--phase2",                   scratch_.file("phase2"), "--stop",
                                     scratch_.file("stop"),        "--record", scratch_.file("record")};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  static void touch(const std::string& path) { std::ofstream(path) << "\n"; }

  ScratchDir scratch_;  // before process_: the files exist while the target runs
  TargetProcess process_;
  pt::Record record_;
};

// profile_target started with 2 workers and going: the threads past their
// start, in their cycles.
inline std::unique_ptr<ProfileTarget> working_target(const std::string& build, std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"--threads", "2"});
  auto target = std::make_unique<ProfileTarget>(build, args);
  target->go();
  usleep(200000);
  return target;
}

// The working threads of working_target (the monitor thread is not one).
inline std::set<int> working_tids(const ProfileTarget& target) {
  return {target.tid("pt-main"), target.tid("pt-worker0"), target.tid("pt-worker1")};
}

// A test parameter: a build of profile_target and how callers are unwound
// (dwarf | fp).
struct BuildCase {
  std::string build;
  std::string callers;
  friend void PrintTo(const BuildCase& c, std::ostream* out) { *out << c.build << " (" << c.callers << ")"; }
};

inline std::string build_case_name(const ::testing::TestParamInfo<BuildCase>& test) {
  return binary_test_name(test.param.build) + "_" + test.param.callers;
}

// Records PID with perf in rounds of `seconds` until the threads TIDS have
// at least min_samples samples (at most max_rounds rounds): enough samples
// that a share's sampling error (about sqrt(p(1-p)/n)) stays well inside
// the 3 points the tests allow, however much CPU the machine leaves the
// target. Samples of other threads are dropped.
inline perf::Recording perf_record_threads(perf::RecordOptions options, const std::set<int>& tids,
                                           size_t min_samples, int max_rounds, const std::string& work_path) {
  perf::Recording all;
  for (int round = 0; round < max_rounds && all.samples.size() < min_samples; ++round) {
    perf::Recording part = perf::record(options, work_path);
    for (auto& sample : part.of_threads(tids)) all.samples.push_back(std::move(sample));
    all.cost.record_wall += part.cost.record_wall;
    all.cost.record_cpu += part.cost.record_cpu;
    all.cost.script_wall += part.cost.script_wall;
    all.cost.script_cpu += part.cost.script_cpu;
    all.cost.data_bytes += part.cost.data_bytes;
  }
  return all;
}

// --- the hot loops, from objdump ---------------------------------------------------------------

struct AddressRange {
  uint64_t first = 0, last = 0;  // static VAs of the loop's first and last instruction
  bool contains(uint64_t address) const { return address >= first && address <= last; }
};

// The innermost loop of FUNCTION in BINARY (objdump, static VAs) that holds
// an instruction starting with MNEMONIC: the smallest range from a backward
// jump's target to the jump. The leaves' hot loops: leaf_a "imul", leaf_b
// "shl", leaf_c "div", leaf_r "rol" (annotate's hottest instruction must be
// in there).
inline AddressRange hot_loop(const std::string& binary, const std::string& function, const std::string& mnemonic) {
  const std::string listing = command_output("objdump -d --no-show-raw-insn " + binary);
  const size_t start = listing.find("<" + function + ">:\n");
  if (start == std::string::npos) throw std::runtime_error("objdump lists no " + function + " in " + binary);
  std::vector<std::pair<uint64_t, std::string>> code;  // address, instruction text
  std::istringstream lines(listing.substr(start, listing.find("\n\n", start) - start));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(":\t");
    if (colon != std::string::npos) code.emplace_back(std::stoull(line.substr(0, colon), nullptr, 16), line.substr(colon + 2));
  }
  AddressRange best;
  for (const auto& [address, text] : code) {
    if (text[0] != 'j') continue;
    const size_t space = text.find_first_of(" \t");
    if (space == std::string::npos) continue;
    const size_t digits = text.find_first_not_of(" \t", space);
    if (digits == std::string::npos || !std::isxdigit(static_cast<unsigned char>(text[digits]))) continue;
    const uint64_t target = std::stoull(text.substr(digits), nullptr, 16);
    if (target > address) continue;
    bool holds = false;
    for (const auto& [other, instruction] : code) holds |= other >= target && other <= address && instruction.rfind(mnemonic, 0) == 0;
    if (holds && (best.last == 0 || address - target < best.last - best.first)) best = {target, address};
  }
  if (best.last == 0) throw std::runtime_error("no loop with " + mnemonic + " in " + function + " of " + binary);
  return best;
}

// A binary's LOAD segments (readelf), to turn the file offsets perf prints
// for a file's code into static VAs (ELF addresses).
class LoadSegments {
 public:
  explicit LoadSegments(const std::string& binary) : binary_(binary) {
    for (const auto& line : command_lines("readelf -lW " + binary)) {
      std::istringstream words(line);
      std::string kind, offset, address, physical, file_size;
      if ((words >> kind >> offset >> address >> physical >> file_size) && kind == "LOAD") {
        segments_.push_back({std::stoull(offset, nullptr, 16), std::stoull(address, nullptr, 16),
                             std::stoull(file_size, nullptr, 16)});
      }
    }
  }
  uint64_t static_va(uint64_t file_offset) const {
    for (const auto& segment : segments_) {
      if (file_offset >= segment.offset && file_offset < segment.offset + segment.size) {
        return segment.address + (file_offset - segment.offset);
      }
    }
    throw std::runtime_error("no LOAD segment of " + binary_ + " holds file offset " + std::to_string(file_offset));
  }

 private:
  struct Segment {
    uint64_t offset, address, size;
  };
  std::string binary_;
  std::vector<Segment> segments_;
};

// --- a profiler's stacks against the target's record ---------------------------------------

inline std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> frames;
  std::istringstream parts(path);
  std::string frame;
  while (std::getline(parts, frame, ';')) frames.push_back(frame);
  return frames;
}

struct LeafAgreement {
  std::string leaf;
  double recorded = 0;  // percent of the working threads' CPU, by the target's clock
  double total = 0;     // percent of the stacks holding the leaf
  double self = 0;      // percent of the stacks whose innermost user frame is the leaf
  uint64_t samples = 0;  // stacks holding the leaf
  uint64_t on_path = 0;  // of those, the ones whose frames from the root to the leaf are a recorded path
  double on_path_percent() const { return samples == 0 ? 0 : 100.0 * static_cast<double>(on_path) / static_cast<double>(samples); }
};

// For every leaf: the stacks' shares against the record's, and how many
// of the leaf's stacks reach it along a path the record names (frames
// above the leaf, its callees such as clock_gettime or [kernel], are not
// part of the path). STACKS: only the working threads' (the record's).
inline std::vector<LeafAgreement> agree_with_record(const folded::Stacks& stacks, const pt::Record& record,
                                                    int phase = 1) {
  std::map<std::string, std::set<std::string>> paths;  // leaf -> recorded paths
  for (const auto& leaf : record.leaves) {
    if (leaf.phase == phase) paths[leaf.name].insert(leaf.path);
  }
  const double all = static_cast<double>(folded::total(stacks));
  std::vector<LeafAgreement> result;
  for (const auto& leaf : pt::leaf_names()) {
    LeafAgreement agreement{leaf, record.leaf_share(leaf, phase)};
    for (const auto& [stack, count] : stacks) {
      const auto frames = split_path(stack);
      size_t position = frames.size();
      for (size_t i = 0; i < frames.size(); ++i) {
        if (frames[i] == leaf) {
          position = i;
          break;
        }
      }
      if (position == frames.size()) continue;
      agreement.samples += count;
      size_t innermost = frames.size();
      while (innermost > 0 && frames[innermost - 1] == "[kernel]") --innermost;
      if (innermost == position + 1) agreement.self += static_cast<double>(count);
      std::string to_leaf;
      for (size_t i = 0; i <= position; ++i) to_leaf += (i == 0 ? "" : ";") + frames[i];
      for (const auto& path : paths[leaf]) {
        if (to_leaf == path || (to_leaf.size() > path.size() &&
                                to_leaf.compare(to_leaf.size() - path.size(), path.size(), path) == 0 &&
                                to_leaf[to_leaf.size() - path.size() - 1] == ';')) {
          agreement.on_path += count;
          break;
        }
      }
    }
    agreement.total = all > 0 ? 100.0 * static_cast<double>(agreement.samples) / all : 0;
    agreement.self = all > 0 ? 100.0 * agreement.self / all : 0;
    result.push_back(agreement);
  }
  return result;
}

// Percent of the stacks whose root is the process's: _start (the main
// thread) or clone3/__clone (threads libc started). libc has several names
// at those addresses (__clone3, __GI___clone3; clone, __GI___clone): these
// are the ones perf chooses, and xref chooses the same.
inline double complete_percent(const folded::Stacks& stacks) {
  uint64_t complete = 0;
  for (const auto& [stack, count] : stacks) {
    const std::string root = stack.substr(0, stack.find(';'));
    if (root == "_start" || root == "clone3" || root == "__clone") {
      complete += count;
    }
  }
  const uint64_t all = folded::total(stacks);
  return all == 0 ? 0 : 100.0 * static_cast<double>(complete) / static_cast<double>(all);
}

inline std::string agreement_table(const std::vector<LeafAgreement>& agreements) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << "leaf     recorded  total   self    samples  on path\n";
  for (const auto& a : agreements) {
    text << std::left << std::setw(9) << a.leaf << std::right << std::setw(7) << a.recorded << " %" << std::setw(6)
         << a.total << " %" << std::setw(6) << a.self << " %" << std::setw(9) << a.samples << std::setw(8)
         << a.on_path_percent() << " %\n";
  }
  return text.str();
}

}  // namespace xref::test
