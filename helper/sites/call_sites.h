// The call sites of a function as its callee-tree node lists them (calls,
// indirect calls, tail jumps, each with its return site), together with
// those of the split-off parts (".cold") the function jumps into: such a
// part runs as part of the function's call (an exception handler, an
// unlikely branch), so its call sites are the function's.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sites/function_sites.h"
#include "callee_tree.h"
#include "disassembly.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

struct NodeCallSite {
  CalleeEdge edge;
  size_t code = 0;          // into NodeCallSites::codes: the code the site is in
  uint64_t caller_va = 0;   // the function, or split-off part, holding the site
  std::string caller;       // its demangled name
  bool in_split_part = false;    // a site of a split-off part, listed after the jump into it
  // Tail jumps only: into the function's own split-off part (not a call),
  // or a jcc (the function may fall through instead).
  bool into_split_part = false;
  bool conditional = false;
};

struct NodeCallSites {
  std::vector<FunctionCode> codes;  // [0] the node's function, then the split-off parts listed
  std::vector<NodeCallSite> sites;  // in address order, a part's sites right after the jump into it
};

// The sites of `node`, an expanded node of `tree` (built over `image`, the
// module `module_index` of ProbeModules) with a known function. `listed`
// holds the functions whose sites were listed already: a split-off part
// reached again is not listed twice, and each part listed is added.
Result<NodeCallSites> node_call_sites(SplitParts& split, uint32_t module_index, const ElfImage& image,
                                      const CalleeTree& tree, const CalleeNode& node, std::set<uint64_t>& listed);

}  // namespace xref
