// The uprobe event of each probe site (ProbePlan::sites), named p<site> in
// the helper's group (attach/tracefs/recording.h). An address's event
// fetches what the BPF program reads at its hits, in the kernel's fetch-arg
// syntax: the --fetch values, the return address for --callers (at a
// function's first instruction [rsp], inside it the CFA rule's slot) and,
// with --regs, every general register; a ret site's (--group-by ret) the
// return value:
//   p:xref_4242_81234/p0 /path/to/exe:0x1c24 d=%di:u64 ra=+0(%sp):x64
//   p:xref_4242_81234/p1 /path/to/exe:0x1d0a ra=+8(%bp):x64
//   p:xref_4242_81234/p2 /path/to/exe:0x1c9f ret=%ax:x64
#pragma once

#include <string>
#include <vector>

#include "attach/tracefs/recording.h"
#include "probe/plan.h"
#include "probe_abi.h"
#include "result.h"

namespace xref {

// The names of xref's own fields in a site's event, "" when it has none;
// each steps aside ("xref_ra") for a fetch of that name.
struct ProbeEventFields {
  std::string return_address;             // --callers, --group-by caller
  std::string ret;                        // a ret site: %ax
  std::vector<std::string> regs;          // --regs: XREF_PROBE_REG_WORDS, in pt_regs order
};
ProbeEventFields probe_event_fields(const ProbePlan& plan, const ProbeSite& site);

// The event of site `index` in `path`.
TracefsEvent probe_site_event(const ProbePlan& plan, size_t index, const std::string& path);

// Every site's event; `module_paths[i]` is the file of plan.modules[i], as
// the kernel may open it (attach/tracefs/path.h).
std::vector<TracefsEvent> probe_site_events(const ProbePlan& plan, const std::vector<std::string>& module_paths);

}  // namespace xref
