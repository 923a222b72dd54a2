// A record of one of probe's uprobe events (events.h) as a site hit: the
// event id (common_type) names the site, and the fields are laid out as
// the event's `format` file says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "attach/tracefs/format.h"
#include "attach/tracefs/recording.h"
#include "probe/plan.h"
#include "probe_abi.h"
#include "result.h"

namespace xref {

// One hit of a site, with what the kernel read at it.
struct SiteHit {
  uint32_t site = 0;
  uint32_t tid = 0;
  uint64_t timestamp_ns = 0;    // CLOCK_MONOTONIC
  uint64_t return_address = 0;  // --callers: the word in the return address's slot; 0 when not read
  uint64_t ret = 0;             // a ret site: %rax
  uint8_t fetch_count = 0;
  bool has_regs = false;
  // Extended to 64 bits as their types say (extend_fetched_value). The
  // kernel cannot say that a read failed: it stores zero bytes.
  std::array<uint64_t, XREF_FETCH_MAX_ITEMS> values{};
  std::array<uint64_t, XREF_PROBE_REG_WORDS> regs{};
  // :string fetches, by string slot: the bytes kept (at most the bound);
  // values[i] is the length | XREF_STRING_CUT. A string the kernel could
  // not read is stored empty, with no bytes: its bit in `failed` is set.
  std::array<std::string, XREF_FETCH_MAX_STRINGS> strings{};
  uint16_t failed = 0;
};

class SiteRecordDecoder {
 public:
  // Reads the format of every site's event.
  static Result<SiteRecordDecoder> load(const TracefsRecording& recording, const ProbePlan& plan);
  // From already parsed formats, formats[i] being site i's (for tests).
  static Result<SiteRecordDecoder> from_formats(const std::vector<EventFormat>& formats, const ProbePlan& plan);

  // The hit, or nothing when the record is not one of our events or is cut short.
  std::optional<SiteHit> decode(std::span<const uint8_t> record, uint64_t timestamp_ns, uint32_t tid) const;

 private:
  struct Layout {
    uint32_t site = 0;
    std::optional<EventField> return_address;
    std::optional<EventField> ret;
    std::vector<EventField> fetches;
    std::vector<FetchType> types;
    std::vector<int> string_slots;  // per fetch: its string slot, -1 for a number
    std::vector<EventField> regs;
  };
  EventField type_field_;
  std::unordered_map<uint32_t, Layout> by_id_;
};

}  // namespace xref
