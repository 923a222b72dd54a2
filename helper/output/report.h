// The edge where results become output: a JSON document on stdout, or text
// on stdout and a one-line error on stderr; returns the exit status.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "output/json_envelope.h"

namespace xref {

struct OutputOptions {
  bool json = false;
};

// Prints `envelope` (JSON mode) or calls `text` and then prints the error,
// if any, as one line on stderr. Returns 0 or the error's exit status.
int report(const OutputOptions& output, const Envelope& envelope,
           const std::function<void(std::ostream&)>& text);

// Emits one element of a streamed list.
using EmitElement = std::function<void(const nlohmann::json&)>;

// JSON mode for a result too long to hold at once: prints the envelope as
// report() would, with `envelope.data[list_key]` an array whose elements
// `fill` emits one at a time. `fill` may add warnings or set the error
// (data then holds what was emitted before it). Returns the exit status.
int report_json_streamed(Envelope& envelope, const std::string& list_key,
                         const std::function<void(const EmitElement&)>& fill);

// One line: "xref: error: MESSAGE (column N); HINT".
std::string error_line(const Error& error);

}  // namespace xref
