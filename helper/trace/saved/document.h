// A saved `xref trace --json` document walked in one pass (SAX), without
// ever holding it whole: its top-level members operation, schema_version,
// process and summary are kept, and each element of its "windows" array is
// built on its own, handed over and dropped, so memory follows the largest
// window, not the file. Nesting is bounded as in untrusted_json.h.
#pragma once

#include <cstddef>
#include <functional>
#include <istream>
#include <nlohmann/json.hpp>

#include "input/untrusted_json.h"

namespace xref {

struct DocumentWalk {
  bool complete = false;    // one JSON value and nothing after it
  bool too_deep = false;
  bool stopped = false;     // `take` asked to stop
  bool top_object = false;  // the value is an object
  bool has_type = false;    // ... with a "type" member: a JSON lines record, not a document
  size_t windows = 0;       // elements of "windows" seen
  nlohmann::json members = nlohmann::json::object();  // operation, schema_version, process, summary
};

// Window `index` of "windows" is built only when `wanted(index)`; `take`
// gets it and returns false to stop the walk there.
using WantedWindow = std::function<bool(size_t index)>;
using TakeWindow = std::function<bool(size_t index, nlohmann::json&& window)>;

DocumentWalk walk_trace_document(std::istream& input, const WantedWindow& wanted, const TakeWindow& take,
                                 size_t max_depth = kMaxJsonDepth);

}  // namespace xref
