// Turns a raw trace event record of one of our uprobe events into a probe
// hit: the event id (common_type) names the probe, common_pid is the thread,
// and the fields are laid out as the event's `format` file says.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "attach/tracefs/format.h"
#include "attach/tracefs/fs.h"
#include "result.h"
#include "trace/plan.h"
#include "trace/window_machine.h"

namespace xref {

class TracefsRecordDecoder {
 public:
  // Reads the format of every event of `group` (one per planned probe).
  static Result<TracefsRecordDecoder> load(const Tracefs& tracefs, const std::string& group, const TracePlan& plan);
  // From already parsed formats, formats[i] being probe i's (for tests).
  static Result<TracefsRecordDecoder> from_formats(const std::vector<EventFormat>& formats, const TracePlan& plan);

  // The hit, or nothing when the record is not one of our events or is cut short.
  std::optional<ProbeHit> decode(std::span<const uint8_t> record, uint64_t timestamp_ns) const;
  // The thread of a record: common_pid (0 when unreadable).
  uint32_t thread_of(std::span<const uint8_t> record) const;

 private:
  struct Layout {
    uint32_t probe_index = 0;
    EventField sp;
    std::optional<EventField> ra;
    std::vector<EventField> fetches;
    std::vector<FetchType> types;
  };
  EventField type_field_;
  EventField pid_field_;
  std::unordered_map<uint32_t, Layout> by_id_;
};

}  // namespace xref
