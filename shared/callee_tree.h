// The static callee tree of a function to a given depth: what the tracer
// probes when asked to follow a function's calls. Built from direct call and
// jump targets only; indirect sites are listed with their operand so the
// user sees where the static picture is incomplete.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "disassembly.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

enum class EdgeKind : uint8_t {
  call,           // direct call
  tail_jump,      // direct jump to another function's start: the callee returns for us
  jump,           // direct jump out of the function to a non-function address or a .cold part
  indirect_call,  // call through a register or memory: target unknown
  indirect_jump,  // jmp through a register or memory: a jump table or a tail call through a pointer
};

const char* edge_kind_name(EdgeKind kind);

struct CalleeEdge {
  EdgeKind kind = EdgeKind::call;
  uint64_t site_va = 0;    // the call or jump instruction
  uint64_t return_va = 0;  // calls: the return site (next instruction); jumps: 0
  bool return_in_function = false;  // calls: the return site is an instruction of the caller
  BranchTarget target;     // direct: target VA and name; indirect: the operand
  int child = -1;          // index of the target's node in CalleeTree::nodes; -1 for indirect edges
};

enum class NodeState : uint8_t {
  expanded,        // disassembled; edges lists every call and exit site
  depth_limit,     // at the requested depth: not disassembled
  recursive,       // the function is already on the path from the root: not expanded again
  external,        // a PLT stub: the callee lives in another object
  not_a_function,  // the target VA starts no known function: kept with its raw VA
  failed,          // disassembly failed; error says why
};

const char* node_state_name(NodeState state);

struct CalleeNode {
  uint64_t va = 0;
  std::optional<FunctionSymbol> function;  // nullopt for not_a_function
  int depth = 0;     // the root is 0
  int parent = -1;   // index of the parent node; -1 for the root
  NodeState state = NodeState::depth_limit;
  bool complete = true;  // expanded nodes: FunctionCode::complete() (no decode gaps or misaligned targets)
  std::vector<CalleeEdge> edges;  // expanded nodes only, in address order
  std::string error;              // failed nodes: the disassembly error
};

// nodes[0] is the root. A parent has one child per distinct direct target,
// shared by every edge to that target.
struct CalleeTree {
  std::vector<CalleeNode> nodes;
};

// The tree rooted at the function starting at root_va, expanded to `depth`
// levels of callees (depth 0: the root alone, not expanded). A root VA that
// starts no known function is invalid_argument. Trees over max_nodes nodes
// are refused with invalid_argument rather than built.
Result<CalleeTree> callee_tree(const ElfImage& image, uint64_t root_va, int depth, size_t max_nodes = 100000);

// Every known function in the tree, once each, sorted by start: the set the
// tracer probes. Targets that start no known function are left out.
std::vector<FunctionSymbol> tree_functions(const CalleeTree& tree);

// Whether the function starting at target_va is a compiler split-off part of
// `caller` (".cold", or in a stripped image an FDE range): code reached by a
// jump from the caller that jumps back into it. Entering it is not leaving
// the caller, and its calls are the caller's.
bool is_split_part(const ElfImage& image, const FunctionCode& caller, uint64_t target_va);

}  // namespace xref
