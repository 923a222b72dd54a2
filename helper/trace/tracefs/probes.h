// The uprobe events of one tracefs trace: one event per planned probe, all
// in the group xref_<helper pid>_<its start time> (tracefs_owner.h), named
// p<probe index>, defined in the global uprobe_events file:
//   p:xref_4242_81234/p0 /path/to/exe:0x1c20 sp=%sp ra=+0(%sp):x64 id=+0(%di):u64
//   r:xref_4242_81234/p7 /path/to/exe:0x1c20 sp=%sp ret=%ax:u64      (--uretprobes)
// Every event records the stack pointer (frames are identified by it),
// entries the return address at sp, then the probe's own fetches.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "attach/tracefs/recording.h"
#include "result.h"
#include "trace/plan.h"

namespace xref {

// The names of xref's own arguments in a probe's event: "sp" and "ra",
// unless one of the probe's fetches is already called that. `ra` is empty
// for probes that do not record the return address (all but entries and
// tail-call sites).
struct TracefsArgNames {
  std::string sp;
  std::string ra;
};
TracefsArgNames tracefs_arg_names(const PlannedProbe& probe);

// The one event of an address with several roles (TracePlan::for_each_role):
// the head, fetching every role's values in chain order (a later role's
// name gets a "_r<N>" suffix if an earlier role uses it), and recording the
// return address when any role is an entry or a tail-call site.
PlannedProbe tracefs_event_probe(const TracePlan& plan, size_t head);

// The event p<index> of `probe` in `path`.
TracefsEvent tracefs_probe_event(const PlannedProbe& probe, size_t index, const std::string& path);

// The event of every head probe of the plan (tracefs_event_probe);
// `module_paths[i]` is the file of plan.modules[i].
Result<std::vector<TracefsEvent>> tracefs_probe_events(const TracePlan& plan,
                                                       const std::vector<std::string>& module_paths);

}  // namespace xref
