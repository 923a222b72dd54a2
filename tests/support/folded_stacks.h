// Folded stacks (`root;caller;leaf COUNT` per line, what FlameGraph,
// inferno and speedscope read, and what `xref profile report --format
// folded` writes), their path shares, and the comparison the profile truth
// tests make between two profilers of the same process over the same
// interval: every caller path with a share of at least 5 % in either profile
// must have the same share in the other within 3 points.
//
// A caller path is a stack's prefix from its root: `main;work_loop;run_a`
// holds every sample whose stack starts with those three frames (the
// "total" share of run_a along that path). Comparing prefixes rather than
// whole stacks keeps the comparison meaningful where stacks fan out below a
// hot function (an interpreter's loop): the path to the hot function carries
// the share even when no single whole stack does.
//
// Parse errors throw std::runtime_error naming the line.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace xref::test::folded {

// Whole stack (root first, ';'-separated) -> samples.
using Stacks = std::map<std::string, uint64_t>;

// `a;b;c 12` per line (empty lines ignored); repeated stacks add up.
inline Stacks parse(const std::string& text) {
  Stacks stacks;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find_first_not_of("0123456789", space + 1) != std::string::npos) {
      throw std::runtime_error("not a folded stack line (`a;b;c COUNT`): '" + line + "'");
    }
    stacks[line.substr(0, space)] += std::stoull(line.substr(space + 1));
  }
  return stacks;
}

inline std::string format(const Stacks& stacks) {
  std::string text;
  for (const auto& [stack, count] : stacks) text += stack + " " + std::to_string(count) + "\n";
  return text;
}

inline uint64_t total(const Stacks& stacks) {
  uint64_t sum = 0;
  for (const auto& entry : stacks) sum += entry.second;
  return sum;
}

// Every prefix path (root first) -> percent of all samples whose stack
// starts with it.
inline std::map<std::string, double> path_shares(const Stacks& stacks) {
  std::map<std::string, uint64_t> counts;
  for (const auto& [stack, count] : stacks) {
    for (size_t end = stack.find(';'); ; end = stack.find(';', end + 1)) {
      counts[stack.substr(0, end)] += count;
      if (end == std::string::npos) break;
    }
  }
  std::map<std::string, double> shares;
  const double all = static_cast<double>(total(stacks));
  for (const auto& [path, count] : counts) shares[path] = all > 0 ? 100.0 * static_cast<double>(count) / all : 0;
  return shares;
}

struct PathShare {
  std::string path;
  double first = 0;   // percent in the first profile
  double second = 0;  // percent in the second
  double difference() const { return std::fabs(first - second); }
};

struct Comparison {
  std::vector<PathShare> compared;  // every path of at least min_share in either profile
  std::vector<PathShare> differing; // of those, the ones further apart than the tolerance
  uint64_t first_samples = 0, second_samples = 0;
  bool agrees() const { return differing.empty() && !compared.empty(); }
  std::string report() const {
    std::ostringstream text;
    text << compared.size() << " paths compared (" << first_samples << " and " << second_samples << " samples), "
         << differing.size() << " differ:\n";
    for (const auto& path : compared) {
      text << "  " << path.first << " % vs " << path.second << " %  " << path.path << "\n";
    }
    return text.str();
  }
};

// Compares every caller path holding at least min_share percent of the
// samples in either profile; differing: those whose shares are more than
// tolerance points apart. An empty profile compares nothing (agrees() is
// false: a comparison of nothing proves nothing).
inline Comparison compare(const Stacks& first, const Stacks& second, double min_share = 5.0,
                          double tolerance = 3.0) {
  Comparison result;
  result.first_samples = total(first);
  result.second_samples = total(second);
  if (result.first_samples == 0 || result.second_samples == 0) return result;
  const auto first_shares = path_shares(first), second_shares = path_shares(second);
  std::map<std::string, PathShare> paths;
  for (const auto& [path, share] : first_shares) {
    if (share >= min_share) paths[path] = {path, share, 0};
  }
  for (const auto& [path, share] : second_shares) {
    if (share >= min_share) paths[path] = {path, 0, share};
  }
  for (auto& [path, entry] : paths) {
    const auto in_first = first_shares.find(path), in_second = second_shares.find(path);
    entry.first = in_first == first_shares.end() ? 0 : in_first->second;
    entry.second = in_second == second_shares.end() ? 0 : in_second->second;
    result.compared.push_back(entry);
    if (entry.difference() > tolerance) result.differing.push_back(entry);
  }
  return result;
}

}  // namespace xref::test::folded
