#include "xprof/line_report.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "xprof/frames.h"

namespace xref {

constexpr const char* kKernelReason = "[kernel]: sampled in kernel mode, no user line";

LineReport line_report(const Profile& profile, const ProfileSelection& selection, ModuleFiles& files) {
  std::map<std::tuple<std::string, uint32_t, std::string, std::string>, uint64_t> lines;
  std::map<std::string, uint64_t> unresolved;
  LineReport report;
  for (size_t index = 0; index < profile.stacks.size(); ++index) {
    const uint64_t count = selection.counts[index];
    if (count == 0) continue;
    const ProfileStack& stack = profile.stacks[index];
    if (stack.in_kernel) {
      unresolved[kKernelReason] += count;
      continue;
    }
    const ProfileLocation& leaf = profile.locations[stack.locations.front()];
    const SourceLines* table = files.lines(leaf.module);
    std::optional<SourceLine> line = table ? table->at(leaf.address) : std::nullopt;
    if (!line) {
      const std::string why = files.why_not(leaf.module);
      unresolved[why.empty() ? files.path(leaf.module) + ": no DWARF line covers the address" : why] += count;
      continue;
    }
    const FrameKey key = frame_key(profile, stack.locations.front());
    // "build/../src/x.c" as "src/x.c": one row per file however the compiler spelled it.
    const std::string file = std::filesystem::path(line->file).lexically_normal().string();
    lines[{file, line->line, frame_name(profile, key), frame_module(profile, key)}] += count;
  }
  for (const auto& [key, samples] : lines) {
    report.lines.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), samples});
  }
  std::stable_sort(report.lines.begin(), report.lines.end(),
                   [](const LineRow& a, const LineRow& b) { return a.samples > b.samples; });
  report.unresolved = unresolved_rows(unresolved);
  for (const auto& row : report.unresolved) report.unresolved_samples += row.samples;
  return report;
}

}  // namespace xref
