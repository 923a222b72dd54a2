// A trace window as text (docs/trace.md, "Text output"), names first, from
// the window object of the live_trace JSON: the same lines in the CLI's live
// output, `xref trace show`, and the debuggers (through serve).
//
//   window 1  thread 11619  complete  ran 353.3 us  18 events  lost 0  r=0x7f60b9f74a80
//      1:0   353.3 us  > handle_request  from worker_main+0x92 at sample_service.c:230
//      1:1     4.1 us    > validate  from handle_request+0x84 at sample_service.c:172
//      1:2               < validate
//      1:6               < price_order  self 37.8 us
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "render/names.h"

namespace xref::render {

// When the process sat stopped (at a debugger's prompt), in the clock of the
// window's timestamps (bpf_ktime, CLOCK_MONOTONIC).
struct StoppedInterval {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

struct WindowStyle {
  bool addresses = false;        // --addresses: "[0x1c40 @0x1ee9]" on each event line
  bool live_addresses = false;   // ... the live ones (a debugger's), else static VAs
  std::optional<uint64_t> session;  // "window 1 (session 2)"
  std::map<uint64_t, std::vector<int>> breakpoints;  // live address -> breakpoint ids: "[bp 3]"
  std::vector<StoppedInterval> stops;
  bool references = true;        // the "W:SEQ" column (`xref break W:SEQ`)
};

// The header line, then one line per event; no trailing newlines.
std::vector<std::string> window_lines(const nlohmann::json& window, Names& names, const WindowStyle& style);
// The header line alone (`trace show --tree` puts the tree under it).
std::string window_header(const nlohmann::json& window, const WindowStyle& style);
// Every code address window_lines asks `names` for, each once: a debugger
// front end names these first.
std::vector<CodeAddress> window_addresses(const nlohmann::json& window);

// "complete", "incomplete (the process exited)", "incomplete (events may be missing)", ...
std::string window_status_text(const nlohmann::json& window);
// With --mark-file: `mark "81"` (`?` after it when the line may have been
// written after the window opened), `mark (no match yet)`, ...; "" without.
std::string window_mark_text(const nlohmann::json& window);
// The stops as the window's events bound them: a stopped process fires no
// probe, so a stop ends no later than the first event a probe observed after
// it began (a front end may learn of a resume only after the process ran on).
std::vector<StoppedInterval> observed_stops(const std::vector<StoppedInterval>& stops, const nlohmann::json& window);
// How long the process sat stopped between `begin_ns` and `end_ns`.
uint64_t stopped_ns(const std::vector<StoppedInterval>& stops, uint64_t begin_ns, uint64_t end_ns);

}  // namespace xref::render
