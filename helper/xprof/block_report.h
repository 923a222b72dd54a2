// --by block: the samples' leaf addresses by basic block of their function
// (basic_blocks.h). Samples in code without a usable file or function, or
// taken in kernel mode, are counted apart by why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xprof/module_files.h"
#include "xprof/selection.h"
#include "xprof/unresolved.h"

namespace xref {

struct BlockRow {
  std::string function;
  std::string module;
  uint64_t start = 0;  // static VA
  uint64_t end = 0;    // one past its last instruction
  uint32_t instructions = 0;
  uint64_t samples = 0;
};

struct BlockReport {
  std::vector<BlockRow> blocks;  // most samples first
  std::vector<UnresolvedSamples> unresolved;
  uint64_t unresolved_samples = 0;
};

BlockReport block_report(const Profile& profile, const ProfileSelection& selection, ModuleFiles& files);

}  // namespace xref
