// `xref trace show FILE [--tree]`: the windows of a saved trace, and with
// --tree each window against the static callee tree of its start function
// ("expected vs called", docs/trace.md). Offline: the binary is read, no
// process is involved.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "callee_tree.h"
#include "elf_image.h"
#include "result.h"
#include "trace/saved/file.h"

namespace xref {

// What a saved trace could see (its summary.traced): a call shows up when
// its call instruction was probed (call-site modes) or its target's entry
// was (--functions). Traces written before summary.traced existed say
// nothing, and every static callee then counts as traced.
struct TracedProbes {
  bool known = false;
  std::set<uint64_t> call_sites;
  std::set<uint64_t> functions;
};

TracedProbes traced_probes(const nlohmann::json& summary);

// The binary the windows are matched against: `bin`, else the traced
// process's exe_path. Its build-id and SHA-256 must be the ones the trace
// recorded (invalid_argument otherwise: "pass --bin"); `warnings` gets a
// line when the trace recorded no identity to check against.
Result<std::shared_ptr<const ElfImage>> open_traced_binary(const nlohmann::json& process, const std::string& bin,
                                                          std::vector<std::string>& warnings);

// The fields of a saved window that trace show and trace export read have
// the types docs/trace.md gives them (invalid_argument naming the field
// otherwise), so the rest of the code reads them without checking again.
// `index`: the window's place in the file, for a window without a window_id.
Result<void> check_saved_window(const nlohmann::json& window, size_t index);

// All windows, or the one whose window_id is `window_id` (invalid_argument
// when there is none), each checked.
Result<std::vector<nlohmann::json>> select_windows(const TraceFile& file, std::optional<uint64_t> window_id);

// The same for a trace opened with check_saved_window: the indices of the
// windows to show.
Result<std::vector<size_t>> select_window_indices(const SavedTrace& trace, std::optional<uint64_t> window_id);

enum class ShowNodeKind : uint8_t {
  function,       // the root, or a static callee of its parent (direct call or tail jump)
  indirect_site,  // an indirect call instruction of the parent; its children are the targets seen there
  observed,       // a call the window made that the static tree does not have
};

const char* show_node_kind_name(ShowNodeKind kind);

struct ShowNode {
  ShowNodeKind kind = ShowNodeKind::function;
  uint64_t va = 0;            // the function's start; 0 for an indirect site
  std::string name;           // demangled, or "fde_4160", or the hex VA of a target no function starts at
  std::string module;         // observed calls into another module ("libc.so.6"); "" for the executable
  int depth = 0;              // calls from the root: 0 for the root; an indirect site and its targets alike 1 + parent's
  int parent = -1;
  std::vector<int> children;  // static callees in address order of their first site, then observed calls
  NodeState state = NodeState::expanded;  // function nodes: as the static tree left them
  bool tail = false;                      // function nodes: reached only by tail jumps
  std::vector<uint64_t> sites;            // the parent's call (or jump) instructions to it; an indirect site's own VA
  std::string operand;                    // indirect sites: "qword ptr [rip + 0x2d86]"
  std::optional<bool> traced;             // could the trace see this call? nullopt: the trace does not say
  uint64_t calls = 0;                     // entries the window made here
  std::map<uint64_t, uint64_t> calls_by_site;  // call-site VA -> entries

  bool in_static_tree() const { return kind != ShowNodeKind::observed; }
};

struct WindowTree {
  uint64_t root_va = 0;
  int depth = 1;                 // levels of callees below the root
  bool traced_known = false;     // TracedProbes::known of the trace
  std::vector<ShowNode> nodes;   // nodes[0] is the root
  uint64_t calls_below_depth = 0;   // entries deeper than `depth`: not shown
  uint64_t calls_outside_root = 0;  // entries not under the root's call (a window that starts elsewhere)
};

// The deepest entry of the window, at least 1 and at most 16 (the trace's
// own --depth bound): the default depth of its tree.
int reached_depth(const nlohmann::json& window);

// The static callee tree of the window's start function (its start_va, or
// the target of its first entry when start_va starts no function: a start
// inside a function), `depth` levels deep, with the window's calls counted
// on it. invalid_argument when neither address starts a function of `image`.
Result<WindowTree> window_tree(const ElfImage& image, const nlohmann::json& window, int depth,
                               const TracedProbes& traced);

// Text: the window line of `xref trace` text output, one line per node
// indented by level, and a count line (docs/trace.md).
void print_window_tree(std::ostream& out, const nlohmann::json& window, const WindowTree& tree);

// {"window_id", ..., "tree": {node with "children"}, "counts": {...}}.
nlohmann::json window_tree_json(const nlohmann::json& window, const WindowTree& tree);

}  // namespace xref
