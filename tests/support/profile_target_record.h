// profile_target's ground truth, read (tests/targets/profile_target.c says
// what it writes): the record it writes at stop, with per thread, per phase
// and per leaf the CPU nanoseconds it measured with CLOCK_THREAD_CPUTIME_ID,
// the calls, and the call path (root first, ';'-separated).
//
// Every parse error throws std::runtime_error naming the line.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace xref::test::profile_target {

// The leaves, in the order of --split.
inline const std::vector<std::string>& leaf_names() {
  static const std::vector<std::string> names = {"leaf_a", "leaf_b", "leaf_c", "leaf_r"};
  return names;
}

struct Thread {
  int tid = 0;
  std::string name;  // pt-main, pt-workerN
  std::string root;  // main or worker_main
  uint64_t cpu_ns[2] = {0, 0};
};

struct Leaf {
  int tid = 0;
  int phase = 1;  // 1 or 2
  std::string name;
  uint64_t ns = 0, calls = 0;
  std::string path;  // root first, ';'-separated, ending in name
};

struct Record {
  int pid = 0;
  unsigned split[2][4] = {};
  std::vector<Thread> threads;
  std::vector<Leaf> leaves;

  std::set<int> tids() const {
    std::set<int> tids;
    for (const auto& thread : threads) tids.insert(thread.tid);
    return tids;
  }
  // All working threads' CPU in PHASE.
  uint64_t cpu_ns(int phase) const {
    uint64_t sum = 0;
    for (const auto& thread : threads) sum += thread.cpu_ns[phase - 1];
    return sum;
  }
  // Percent of all threads' CPU in PHASE spent in LEAF (by the target's own clock).
  double leaf_share(const std::string& leaf, int phase = 1) const {
    uint64_t sum = 0;
    for (const auto& entry : leaves) {
      if (entry.phase == phase && entry.name == leaf) sum += entry.ns;
    }
    const uint64_t all = cpu_ns(phase);
    return all == 0 ? 0 : 100.0 * static_cast<double>(sum) / static_cast<double>(all);
  }
  // The path to LEAF in thread TID (empty when the thread never ran it).
  std::string path(int tid, const std::string& leaf) const {
    for (const auto& entry : leaves) {
      if (entry.tid == tid && entry.name == leaf) return entry.path;
    }
    return "";
  }
};

inline Record parse_record(std::istream& in) {
  Record record;
  bool ended = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    bool ok = true;
    if (kind == "pid") {
      ok = static_cast<bool>(words >> record.pid);
    } else if (kind == "split") {
      int phase = 0;
      ok = (words >> phase) && (phase == 1 || phase == 2);
      for (int leaf = 0; ok && leaf < 4; ++leaf) ok = static_cast<bool>(words >> record.split[phase - 1][leaf]);
    } else if (kind == "thread") {
      Thread thread;
      ok = static_cast<bool>(words >> thread.tid >> thread.name >> thread.root);
      record.threads.push_back(thread);
    } else if (kind == "cpu") {
      int tid = 0, phase = 0;
      uint64_t ns = 0;
      ok = (words >> tid >> phase >> ns) && (phase == 1 || phase == 2) && !record.threads.empty() &&
           record.threads.back().tid == tid;
      if (ok) record.threads.back().cpu_ns[phase - 1] = ns;
    } else if (kind == "leaf") {
      Leaf leaf;
      ok = static_cast<bool>(words >> leaf.tid >> leaf.phase >> leaf.name >> leaf.ns >> leaf.calls >> leaf.path);
      record.leaves.push_back(leaf);
    } else if (kind == "end") {
      ended = true;
    } else {
      ok = false;
    }
    std::string extra;
    if (!ok || (words >> extra)) throw std::runtime_error("profile_target record: bad line: '" + line + "'");
  }
  if (!ended) throw std::runtime_error("profile_target record: no `end` line (the target did not finish it)");
  return record;
}

inline Record read_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("profile_target record: cannot read " + path);
  return parse_record(in);
}

}  // namespace xref::test::profile_target
