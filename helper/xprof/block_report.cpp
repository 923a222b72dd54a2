#include "xprof/block_report.h"

#include <algorithm>
#include <map>

#include "xprof/basic_blocks.h"
#include "xprof/frames.h"

namespace xref {
namespace {

// One function's blocks, or why there are none.
struct FunctionBlocks {
  std::vector<BasicBlock> blocks;
  std::string problem;
};

FunctionBlocks blocks_of(const Profile& profile, uint32_t function, ModuleFiles& files) {
  const ProfileFunction& recorded = profile.functions[function];
  const ElfImage* image = files.image(recorded.module);
  if (image == nullptr) return {{}, files.why_not(recorded.module)};
  const FunctionSymbol* symbol = image->function_containing(recorded.start);
  if (symbol == nullptr || symbol->start != recorded.start) {
    return {{}, files.path(recorded.module) + ": no function starts at the capture's " + recorded.name};
  }
  auto code = disassemble(*image, *symbol);
  if (!code) return {{}, recorded.name + ": " + code.error().message};
  return {basic_blocks(*image, *code), ""};
}

}  // namespace

BlockReport block_report(const Profile& profile, const ProfileSelection& selection, ModuleFiles& files) {
  std::map<uint32_t, FunctionBlocks> functions;
  std::map<std::pair<uint32_t, uint64_t>, BlockRow> rows;
  std::map<std::string, uint64_t> unresolved;
  for (size_t index = 0; index < profile.stacks.size(); ++index) {
    const uint64_t count = selection.counts[index];
    if (count == 0) continue;
    const ProfileStack& stack = profile.stacks[index];
    if (stack.in_kernel) {
      unresolved["[kernel]: sampled in kernel mode"] += count;
      continue;
    }
    const ProfileLocation& leaf = profile.locations[stack.locations.front()];
    if (!leaf.function) {
      unresolved["no function symbol covers the address"] += count;
      continue;
    }
    auto found = functions.find(*leaf.function);
    if (found == functions.end()) found = functions.emplace(*leaf.function, blocks_of(profile, *leaf.function, files)).first;
    const FunctionBlocks& blocks = found->second;
    const BasicBlock* block = blocks.problem.empty() ? block_containing(blocks.blocks, leaf.address) : nullptr;
    if (block == nullptr) {
      unresolved[blocks.problem.empty() ? profile.functions[*leaf.function].name + ": the address is in no decoded instruction"
                                        : blocks.problem] += count;
      continue;
    }
    BlockRow& row = rows[{*leaf.function, block->start}];
    if (row.samples == 0) {
      const FrameKey key = frame_key(profile, stack.locations.front());
      row = {frame_name(profile, key), frame_module(profile, key), block->start, block->end, block->instructions, 0};
    }
    row.samples += count;
  }
  BlockReport report;
  for (auto& [key, row] : rows) report.blocks.push_back(std::move(row));
  std::stable_sort(report.blocks.begin(), report.blocks.end(),
                   [](const BlockRow& a, const BlockRow& b) { return a.samples > b.samples; });
  report.unresolved = unresolved_rows(unresolved);
  for (const auto& row : report.unresolved) report.unresolved_samples += row.samples;
  return report;
}

}  // namespace xref
