#include "profile/capture_top.h"

#include <map>
#include <optional>

#include "output/json_envelope.h"
#include "xprof/frames.h"
#include "xprof/function_report.h"
#include "xprof/selection.h"

namespace xref {
namespace {

// The location of each function where it took the most samples as the leaf.
std::map<FrameKey, uint32_t> hottest_leaves(const Profile& profile) {
  std::map<uint32_t, uint64_t> leaf_samples;  // location -> samples
  for (const ProfileSample& sample : profile.samples) {
    if (sample.stack >= profile.stacks.size()) continue;
    const ProfileStack& stack = profile.stacks[sample.stack];
    if (stack.locations.empty() || stack.in_kernel) continue;
    leaf_samples[stack.locations.front()] += sample.count;
  }
  std::map<FrameKey, std::pair<uint32_t, uint64_t>> best;
  for (const auto& [location, samples] : leaf_samples) {
    auto& slot = best[frame_key(profile, location)];
    if (samples > slot.second) slot = {location, samples};
  }
  std::map<FrameKey, uint32_t> hottest;
  for (const auto& [key, found] : best) hottest[key] = found.first;
  return hottest;
}

}  // namespace

nlohmann::json capture_top_json(const Profile& profile, size_t top) {
  auto selection = select_samples(profile);
  if (!selection || selection->samples == 0) return nullptr;
  const std::vector<FunctionRow> rows = function_rows(profile, *selection);
  const std::map<FrameKey, uint32_t> hottest = hottest_leaves(profile);
  nlohmann::json out = nlohmann::json::array();
  uint64_t hidden = 0;
  for (size_t index = 0; index < rows.size(); ++index) {
    const FunctionRow& row = rows[index];
    if (index >= top) {
      hidden += row.self;
      continue;
    }
    // Where to name it: its hottest own address, else its start.
    std::optional<uint64_t> static_va;
    uint32_t module = kNoModule;
    if (const auto hot = hottest.find(row.key); hot != hottest.end()) {
      const ProfileLocation& location = profile.locations[hot->second];
      static_va = location.address;
      module = location.module;
    } else if (row.key.kind == FrameKey::Kind::function && row.key.function < profile.functions.size()) {
      const ProfileFunction& function = profile.functions[row.key.function];
      static_va = function.start;
      module = function.module;
    } else if (row.key.kind == FrameKey::Kind::address) {
      static_va = row.key.address;
      module = row.key.module;
    }
    nlohmann::json live = nullptr;
    if (static_va && module == kNoModule) live = hex_value(*static_va);
    else if (static_va && module < profile.modules.size()) live = hex_value(*static_va + profile.modules[module].load_bias);
    out.push_back({{"name", row.name},
                   {"module", row.module},
                   {"self", row.self},
                   {"total", row.total},
                   {"self_share", selection->share(row.self)},
                   {"total_share", selection->share(row.total)},
                   {"live", live},
                   {"static", static_va ? nlohmann::json(hex_value(*static_va)) : nlohmann::json(nullptr)}});
  }
  return {{"samples", selection->samples},
          {"rows", std::move(out)},
          {"rows_not_shown", rows.size() > top ? rows.size() - top : 0},
          {"samples_not_shown", hidden}};
}

}  // namespace xref
