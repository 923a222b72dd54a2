#include "trace/tracefs/probes.h"

#include "attach/tracefs/arg_names.h"
#include "hex.h"

namespace xref {
namespace {

bool fetch_named(const PlannedProbe& probe, const std::string& name) {
  for (const FetchItem& item : probe.fetches) {
    if (item.name == name) return true;
  }
  return false;
}

}  // namespace

PlannedProbe tracefs_event_probe(const TracePlan& plan, size_t head) {
  PlannedProbe event = plan.probes[head];
  event.fetches.clear();
  size_t role_number = 0;
  plan.for_each_role(head, [&](size_t, const PlannedProbe& role) {
    if (role.kind == XREF_PROBE_ENTRY) event.kind = XREF_PROBE_ENTRY;
    if (role.kind == XREF_PROBE_TAIL_SITE && event.kind != XREF_PROBE_ENTRY) event.kind = XREF_PROBE_TAIL_SITE;
    for (FetchItem item : role.fetches) {
      while (fetch_named(event, item.name)) item.name += "_r" + std::to_string(role_number);
      event.fetches.push_back(item);
    }
    ++role_number;
  });
  return event;
}

TracefsArgNames tracefs_arg_names(const PlannedProbe& probe) {
  TracefsArgNames names;
  names.sp = tracefs_free_arg_name(probe.fetches, "sp");
  // Where the word at sp is a return address the window machine keeps
  // (its frame's, to tell later whether the frame is still there).
  if (probe.kind == XREF_PROBE_ENTRY || probe.kind == XREF_PROBE_TAIL_SITE) {
    names.ra = tracefs_free_arg_name(probe.fetches, "ra");
  }
  return names;
}

TracefsEvent tracefs_probe_event(const PlannedProbe& probe, size_t index, const std::string& path) {
  const TracefsArgNames names = tracefs_arg_names(probe);
  TracefsEvent event;
  event.name = tracefs_event_name(index);
  event.uretprobe = probe.kind == XREF_PROBE_URETPROBE;
  event.definition = path + ":" + to_hex(probe.file_offset) + " " + names.sp + "=%sp";
  if (!names.ra.empty()) event.definition += " " + names.ra + "=+0(%sp):x64";
  if (!probe.fetches.empty()) event.definition += " " + tracefs_fetch_args(probe.fetches);
  return event;
}

Result<std::vector<TracefsEvent>> tracefs_probe_events(const TracePlan& plan,
                                                       const std::vector<std::string>& module_paths) {
  std::vector<TracefsEvent> events;
  for (size_t index = 0; index < plan.probes.size(); ++index) {
    if (!plan.probes[index].head) continue;
    const PlannedProbe probe = tracefs_event_probe(plan, index);
    if (probe.fetches.size() > XREF_FETCH_MAX_ITEMS) {
      return make_error(ErrorCode::unsupported,
                        "the roles at " + to_hex(probe.static_va) + " fetch more than " +
                            std::to_string(XREF_FETCH_MAX_ITEMS) + " values in all, too many for one tracefs event",
                        "use a BPF backend, or fetch fewer values");
    }
    if (probe.module_index >= module_paths.size()) {
      return make_error(ErrorCode::internal, "a probe in an unknown module");
    }
    events.push_back(tracefs_probe_event(probe, index, module_paths[probe.module_index]));
  }
  return events;
}

}  // namespace xref
