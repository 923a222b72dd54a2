// Rendering a window diff (trace_diff.h): the text view, a tree of the
// aligned events with a mark per line, and the `data` of the trace_diff
// JSON document (docs/trace.md, "Comparing windows").
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "trace/saved/diff.h"

namespace xref {

// One of the two compared windows and where it came from.
struct DiffSide {
  std::string path;
  nlohmann::json window;   // the saved window
  nlohmann::json process;  // its file's process identity (may be null)
};

struct DiffReport {
  DiffSide a;
  DiffSide b;
  WindowDiff diff;
  std::vector<std::string> warnings;
};

// Unchanged events more than `context` steps away from every difference
// are collapsed into "… N same events", except the entries of the calls
// that enclose a difference, which keep the tree readable.
constexpr size_t kDefaultDiffContext = 2;

struct DiffTextStyle {
  size_t context = kDefaultDiffContext;
  bool addresses = false;  // each event's static VA after its name
};

// Header (which window of which file), a summary line, then, when the
// windows differ, the aligned events (names first) indented by depth and marked ' ' same,
// '-' only in A, '+' only in B, '~' fetched values differ ("name: A → B").
void print_diff(std::ostream& out, const DiffReport& report, const DiffTextStyle& style = {});

// {equal, a, b, summary, differences[]}: each difference with its seq in A
// and in B, kind, target_va, symbol, depth, and the changed values.
nlohmann::json diff_json(const DiffReport& report);

}  // namespace xref
