#include "code_reach.h"

#include <algorithm>

namespace xref {

std::vector<bool> reachable_steps(std::span<const FlowStep> steps, std::span<const uint64_t> entries) {
  std::vector<bool> reachable(steps.size(), false);
  if (steps.empty()) return reachable;
  std::vector<size_t> work;
  auto reach = [&](uint64_t va) {
    auto it = std::lower_bound(steps.begin(), steps.end(), va, [](const FlowStep& s, uint64_t v) { return s.va < v; });
    if (it == steps.end() || it->va != va) return;  // outside, or inside an instruction
    const auto index = static_cast<size_t>(it - steps.begin());
    if (!reachable[index]) {
      reachable[index] = true;
      work.push_back(index);
    }
  };
  reach(steps.front().va);
  const uint64_t end = steps.back().va + 1;
  for (auto it = std::lower_bound(entries.begin(), entries.end(), steps.front().va); it != entries.end() && *it < end;
       ++it) {
    reach(*it);
  }
  while (!work.empty()) {
    const size_t index = work.back();
    work.pop_back();
    const FlowStep& step = steps[index];
    if (step.flow == Flow::jump || step.flow == Flow::conditional_jump) reach(step.target);
    const bool falls_through = step.flow == Flow::next || step.flow == Flow::conditional_jump;
    if (falls_through && index + 1 < steps.size()) reach(steps[index + 1].va);
  }
  return reachable;
}

}  // namespace xref
