// A probe's result as text (docs/probe.md, "Output"): the whole live_probe
// document (the end of `xref probe`, `xref show`), what changed since the
// last stop (the `changes` of a drain), and a --stop-when stop; callers,
// stacks and samples named by the Names ("handle_request+0x84 at
// sample_service.c:172").
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "render/names.h"

namespace xref::render {

struct ProbeStyle {
  // In a debugger: "xref: probe session 2 (running), 1044 ms, backend uprobe_multi";
  // else the CLI's first line, with the process.
  std::optional<uint64_t> session;
  std::string state;  // "running", "ended (duration)"
  size_t samples = 8;  // sample lines per address (0: all of them)
};

std::vector<std::string> probe_lines(const nlohmann::json& document, Names& names, const ProbeStyle& style);
// What changed at a stop (serve's probe_update `changes`), for session `session`.
std::vector<std::string> probe_change_lines(uint64_t session, const nlohmann::json& changes, Names& names);
// --stop-when's stop (`stop_when.stop` of the document, `stop` of the changes).
std::vector<std::string> probe_stop_lines(uint64_t session, const nlohmann::json& stop, Names& names);
// Every code address the functions above ask `names` for, each once.
std::vector<CodeAddress> probe_addresses(const nlohmann::json& document_or_changes);

}  // namespace xref::render
