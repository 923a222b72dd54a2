// A live capture (docs/profile.md, "Capturing"): the profile program
// loaded, one sampling event per thread of the target, the run until the
// duration, Ctrl-C, the target's exit or an exec, then everything read
// back from the maps into a Profile (helper/xprof/profile.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "process/target.h"
#include "profile/request.h"
#include "profile/sampling_events.h"
#include "result.h"
#include "xprof/profile.h"

namespace xref {

struct CaptureCallbacks {
  int cancel_fd = -1;  // readable: stop (Ctrl-C)
  std::string cancel_reason = "interrupted";  // ended_by when cancel_fd ended it
  std::function<void(size_t events)> attached;
  // A debugger's session: drain_fd readable (an eventfd) when a front end
  // asks; `drained` answers, and a reason it returns ends the capture.
  int drain_fd = -1;
  std::function<std::optional<std::string>()> drained;
};

struct Capture {
  Profile profile;
  std::optional<Error> target_changed;  // process_changed: an exec ended the capture
  size_t events_opened = 0;             // one per thread found at start
  uint64_t event_count = 0;             // the events' summed count (cpu-clock: ns of CPU)
  uint64_t lost_records = 0;            // PERF_RECORD_LOST in the throttle rings
  uint64_t tables_compiled = 0;
  uint32_t table_rows_capacity = 0;
  uint32_t table_rows_used = 0;
};

Result<Capture> run_capture(Target& target, const ProfileRequest& request, const SamplingEvent& event,
                            const CaptureCallbacks& callbacks);

}  // namespace xref
