// `watch` in a debugger: the expressions the front end evaluates before
// anything is attached (prepare.evaluate), and its answers
// (prepared.evaluated) put into the request (docs/protocol.md, "watch in a
// debugger").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "serve/protocol.h"
#include "serve/session_request.h"

namespace xref::serve {

// prepare.evaluate: [{index, expression, location, count, for}], empty when
// nothing is to be evaluated.
nlohmann::json watch_evaluate_list(const SessionSpec& spec);

// The answers of prepared.evaluated applied to spec.watch's request; an
// error naming the expression the debugger could not evaluate, or a
// malformed answer.
std::optional<ProtocolError> apply_watch_evaluations(SessionSpec& spec, const nlohmann::json& prepared);

}  // namespace xref::serve
