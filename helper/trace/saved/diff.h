// `xref trace diff`: two windows of saved traces aligned call event by call
// event (sequence_alignment.h). Events are the same call when they agree on
// what stays put across runs of one build: kind, module, static target VA,
// depth, and whether the call was entered by a tail jump. Aligned events
// whose fetched values differ are "changed".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "result.h"
#include "trace/saved/file.h"

namespace xref {

// Windows differing in more events than this are refused rather than
// aligned in time quadratic in the differences.
constexpr size_t kMaxDifferingEvents = 20000;

// One saved event, as the diff sees it.
struct DiffEvent {
  uint64_t seq = 0;
  std::string kind;        // entry, return, tail_exit, unwound, stop
  std::string module;      // empty for the executable
  uint64_t target_va = 0;  // static
  uint32_t depth = 0;
  bool tail_call = false;
  std::string symbol;
  // The saved fetches, without an indirect call's "target" (a live address,
  // different in every run; target_va already names the callee).
  nlohmann::json fetches = nlohmann::json::array();
};

struct ValueChange {
  std::string name;
  nlohmann::json a;  // saved_fetch_value, null when not fetched on that side
  nlohmann::json b;
};

enum class DiffMark { same, only_a, only_b, changed };

struct DiffStep {
  DiffMark mark = DiffMark::same;
  std::optional<size_t> a;  // index into WindowDiff::a (same, changed, only_a)
  std::optional<size_t> b;  // index into WindowDiff::b (same, changed, only_b)
  std::vector<ValueChange> changes;  // changed only
};

struct WindowDiff {
  std::vector<DiffEvent> a;
  std::vector<DiffEvent> b;
  std::vector<DiffStep> steps;  // in order; a run of differences lists A's events, then B's
  size_t only_a = 0;
  size_t only_b = 0;
  size_t changed = 0;
  size_t same = 0;
  bool equal() const { return only_a == 0 && only_b == 0 && changed == 0; }
  // The event a step shows: A's when it has one.
  const DiffEvent& event(const DiffStep& step) const { return step.a ? a[*step.a] : b[*step.b]; }
};

// A saved window's events. Errors (invalid_argument) name the event whose
// kind, depth, target_va or fetches are missing or malformed.
Result<std::vector<DiffEvent>> diff_events(const nlohmann::json& window);

// Aligns the events of two saved windows; invalid_argument for a malformed
// window (named by `a_name` or `b_name` and its window_id) or more than
// `max_differing_events` events not in common.
Result<WindowDiff> diff_windows(const nlohmann::json& a, const nlohmann::json& b,
                                size_t max_differing_events = kMaxDifferingEvents, const std::string& a_name = "A",
                                const std::string& b_name = "B");

// Static VAs compare only within one build. Refuses (invalid_argument) two
// traces whose process build-ids differ (SHA-256 of the executable when
// neither has a build-id), or a trace that does not say its build, unless
// `allow_mismatch`; then returns what was let through, as warnings.
// `a` and `b` are the traces' "process" objects; `a_name` and `b_name`
// name the traces in messages.
Result<std::vector<std::string>> check_same_build(const std::string& a_name, const nlohmann::json& a,
                                                  const std::string& b_name, const nlohmann::json& b,
                                                  bool allow_mismatch);

}  // namespace xref
