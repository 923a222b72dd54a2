#include "xprof/function_report.h"

#include <algorithm>
#include <map>
#include <set>

namespace xref {

std::vector<FunctionRow> function_rows(const Profile& profile, const ProfileSelection& selection) {
  std::map<FrameKey, FunctionRow> rows;
  for (size_t index = 0; index < profile.stacks.size(); ++index) {
    const uint64_t count = selection.counts[index];
    if (count == 0) continue;
    const std::vector<FrameKey> path = stack_path(profile, profile.stacks[index]);
    const std::set<FrameKey> distinct(path.begin(), path.end());
    for (const FrameKey& key : distinct) rows[key].total += count;
    rows[path.back()].self += count;
  }
  std::vector<FunctionRow> sorted;
  sorted.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.key = key;
    row.name = frame_name(profile, key);
    row.module = frame_module(profile, key);
    sorted.push_back(std::move(row));
  }
  std::sort(sorted.begin(), sorted.end(), [](const FunctionRow& a, const FunctionRow& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.total != b.total) return a.total > b.total;
    return a.name < b.name;
  });
  return sorted;
}

}  // namespace xref
