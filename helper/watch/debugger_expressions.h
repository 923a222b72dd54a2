// In a debugger, what `xref watch` is given is mostly expressions for the
// debugger to evaluate (`order->amount`, `-l &g_total`, `*buf@64`, the SLOT
// of a --follow): the helper lists them (the `prepare.evaluate` a front end
// answers, docs/protocol.md "watch in a debugger"), then rewrites the
// request with the addresses and sizes the debugger found, each range
// labelled with the expression it came from. A literal live address
// (0x...[:LEN]) is taken as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "result.h"
#include "watch/request.h"

namespace xref {

struct WatchExpression {
  uint32_t index = 0;        // its place in the list (the front end answers by it)
  std::string expression;    // what the debugger evaluates: EXPR of `EXPR@N`
  std::string spelled;       // as typed
  bool location = false;     // -l: the value is the address
  uint64_t count = 1;        // N of `EXPR@N` (gdb's artificial array)
  bool follow = false;       // the SLOT of a --follow (else an ADDR)
  size_t source = 0;         // index into request.addresses or request.follows
  std::string follow_rest;   // a --follow's "->+OFF:LEN"
};

// The request's expressions, in order (addresses, then --follow slots);
// none without a debugger. A malformed `EXPR@N` or --follow is an error
// naming it.
Result<std::vector<WatchExpression>> watch_expressions(const WatchRequest& request);

// What the debugger said of one expression.
struct EvaluatedExpression {
  uint32_t index = 0;
  uint64_t address = 0;
  uint64_t size = 0;                  // its type's size (-l: the pointee's; 0: unknown)
  std::string type;
  std::optional<std::string> error;   // one line from the debugger
};

// The request with every expression replaced by its live address (and
// length: -s, else size x count, else 8 for -l), labelled with the
// expression. An expression the debugger could not evaluate, or one
// without an answer, is an invalid_argument error naming it.
Result<void> apply_evaluations(WatchRequest& request, const std::vector<WatchExpression>& expressions,
                               const std::vector<EvaluatedExpression>& evaluated);

}  // namespace xref
