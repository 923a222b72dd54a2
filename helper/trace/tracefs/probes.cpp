#include "trace/tracefs/probes.h"

#include "hex.h"

namespace xref {
namespace {

// The kernel parses a write to uprobe_events in chunks of 4 KiB.
constexpr size_t kWriteBatchBytes = 3500;

bool fetch_named(const PlannedProbe& probe, const std::string& name) {
  for (const FetchItem& item : probe.fetches) {
    if (item.name == name) return true;
  }
  return false;
}

std::string free_name(const PlannedProbe& probe, const std::string& preferred) {
  std::string name = preferred;
  while (fetch_named(probe, name)) name = "xref_" + name;
  return name;
}

}  // namespace

std::string tracefs_event_name(size_t probe_index) { return "p" + std::to_string(probe_index); }

PlannedProbe tracefs_event_probe(const TracePlan& plan, size_t head) {
  PlannedProbe event = plan.probes[head];
  event.fetches.clear();
  size_t role_number = 0;
  plan.for_each_role(head, [&](size_t, const PlannedProbe& role) {
    if (role.kind == XREF_PROBE_ENTRY) event.kind = XREF_PROBE_ENTRY;
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
  names.sp = free_name(probe, "sp");
  if (probe.kind == XREF_PROBE_ENTRY) names.ra = free_name(probe, "ra");
  return names;
}

std::string tracefs_probe_definition(const PlannedProbe& probe, size_t index, const std::string& group,
                                     const std::string& path) {
  const TracefsArgNames names = tracefs_arg_names(probe);
  std::string line = probe.kind == XREF_PROBE_URETPROBE ? "r:" : "p:";
  line += group + "/" + tracefs_event_name(index) + " " + path + ":" + to_hex(probe.file_offset);
  line += " " + names.sp + "=%sp";
  if (!names.ra.empty()) line += " " + names.ra + "=+0(%sp):x64";
  if (!probe.fetches.empty()) line += " " + tracefs_fetch_args(probe.fetches);
  return line;
}

Result<void> define_tracefs_probes(const Tracefs& tracefs, const TracePlan& plan, const std::string& group,
                                   const std::vector<std::string>& module_paths) {
  std::string batch;
  size_t batch_first = 0;
  auto flush = [&](size_t next) -> Result<void> {
    if (batch.empty()) return {};
    auto written = tracefs.append("uprobe_events", batch);
    if (!written) {
      Error error = written.error();
      error.message = "defining the uprobe events " + tracefs_event_name(batch_first) + ".." +
                      tracefs_event_name(next - 1) + " failed: " + error.message;
      if (const std::string kernel = tracefs.last_error_log_line(); !kernel.empty()) {
        error.message += " (kernel: " + kernel + ")";
      }
      if (error.code == ErrorCode::file_error) error.code = ErrorCode::unsupported;
      return error;
    }
    batch.clear();
    batch_first = next;
    return {};
  };
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
    const std::string line = tracefs_probe_definition(probe, index, group, module_paths[probe.module_index]) + "\n";
    if (!batch.empty() && batch.size() + line.size() > kWriteBatchBytes) {
      if (auto flushed = flush(index); !flushed) return flushed;
    }
    batch += line;
  }
  return flush(plan.probes.size());
}

}  // namespace xref
