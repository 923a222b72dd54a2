// The edge where results become output: a JSON document on stdout, or text
// on stdout and a one-line error on stderr; returns the exit status.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "json_envelope.h"

namespace xref {

struct OutputOptions {
  bool json = false;
};

// Prints `envelope` (JSON mode) or calls `text` and then prints the error,
// if any, as one line on stderr. Returns 0 or the error's exit status.
int report(const OutputOptions& output, const Envelope& envelope,
           const std::function<void(std::ostream&)>& text);

// One line: "xref: error: MESSAGE (column N); HINT".
std::string error_line(const Error& error);

}  // namespace xref
