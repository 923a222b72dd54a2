// Who owns a tracefs trace: the helper's PID and start time, written into
// the names of its event group (xref_<PID>_<start>) and its instance
// (xref-<PID>-<start>). Leftovers are then told from a live trace by the
// process itself, never by what its executable is called: a PID that is
// gone, or that a later process reuses, owns nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace xref {

struct TracefsOwner {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22; 0 in the names older helpers used
  bool operator==(const TracefsOwner&) const = default;
};

// PID as it runs now (start_ticks 0 if /proc cannot say).
TracefsOwner tracefs_owner_of_process(pid_t pid);

std::string tracefs_group_name(const TracefsOwner& owner);     // "xref_4242_81234"
std::string tracefs_instance_name(const TracefsOwner& owner);  // "xref-4242-81234"

// The owner a group ('_') or instance ('-') name gives: "xref_4242_81234",
// or an older helper's "xref_4242" (start_ticks 0); nullopt for any other
// name, which xref never touches.
std::optional<TracefsOwner> tracefs_owner_in_name(const std::string& name, char separator);

// The owner still runs: PID exists, is no zombie, and started at
// start_ticks (any start for an older name, which cannot tell).
bool tracefs_owner_alive(const TracefsOwner& owner);

}  // namespace xref
