#include "watch/stop_when.h"

#include <bpf/libbpf.h>

#include <cstring>
#include <vector>

#include "filter_expr.h"
#include "filter_program.h"

namespace xref {

Result<std::optional<xref_filter_program>> compile_watch_stop(const WatchRequest& request) {
  if (request.stop_when.empty()) return std::optional<xref_filter_program>();
  // The slots are watch_stop_abi.h's: value, then old.
  const std::vector<FilterVariable> variables = {{"value", false, 0, 0}, {"old", false, 0, 0}};
  auto hint = [](Error error) {
    error.message = "--stop-when: " + error.message;
    if (error.hint.empty()) error.hint = "a condition over value (the bytes written) and old, e.g. 'value == 0'";
    return error;
  };
  auto parsed = parse_filter(request.stop_when, variables);
  if (!parsed) return hint(parsed.error());
  auto lowered = lower_filter(*parsed);
  if (!lowered) return hint(lowered.error());
  return std::optional<xref_filter_program>(to_bpf_program(*lowered));
}

std::optional<WatchStop> read_watch_stop(const xref_watch_stop& noted) {
  xref_watch_stop copy;
  std::memcpy(&copy, &noted, sizeof copy);
  if (copy.fired == 0) return std::nullopt;
  WatchStop stop;
  stop.sequence = copy.sequence;
  stop.tid = copy.tid;
  stop.range = copy.range;
  stop.match = copy.match;
  stop.timestamp_ns = copy.timestamp_ns;
  stop.signal_result = copy.signal_result;
  return stop;
}

Result<void> fill_watch_stop_map(const WatchPlan& plan, bpf_map* stop_filter) {
  if (!plan.stop_filter) return {};
  const uint32_t zero = 0;
  if (bpf_map__update_elem(stop_filter, &zero, sizeof zero, &*plan.stop_filter, sizeof(xref_filter_program), BPF_ANY) !=
      0) {
    return make_error(ErrorCode::internal, "the --stop-when condition could not be written to the watch program");
  }
  return {};
}

}  // namespace xref
