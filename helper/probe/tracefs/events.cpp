#include "probe/tracefs/events.h"

#include "attach/tracefs/arg_names.h"
#include "hex.h"

namespace xref {
namespace {

// struct pt_regs, as the kernel names its fields after '%'.
constexpr const char* kRegisterNames[XREF_PROBE_REG_WORDS] = {
    "r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax",
    "cx",  "dx",  "si",  "di",  "orig_ax", "ip", "cs", "flags", "sp", "ss"};

// The return address's slot as a fetch: [rsp] at a function's first
// instruction, [base + offset] inside it (the CFA rule's CFA - 8).
FetchItem return_address_fetch(const xref_probe_site& compiled, const std::string& name) {
  FetchItem item;
  item.name = name;
  item.type = FetchType{8, false, true};
  if (compiled.caller == XREF_CALLER_AT_SP) {
    item.base = Register::sp;
    item.deref_offsets = {0};
  } else {
    item.base = compiled.caller_base == XREF_CALLER_BASE_BP ? Register::bp : Register::sp;
    item.deref_offsets = {compiled.caller_offset};
  }
  return item;
}

}  // namespace

ProbeEventFields probe_event_fields(const ProbePlan& plan, const ProbeSite& site) {
  ProbeEventFields fields;
  if (site.ret) {
    fields.ret = "ret";  // a ret site fetches nothing else
    return fields;
  }
  if (site.compiled.caller != XREF_CALLER_NONE) fields.return_address = tracefs_free_arg_name(plan.fetches, "ra");
  if (site.compiled.flags & XREF_SITE_F_REGS) {
    for (const char* name : kRegisterNames) fields.regs.push_back(tracefs_free_arg_name(plan.fetches, name));
  }
  return fields;
}

TracefsEvent probe_site_event(const ProbePlan& plan, size_t index, const std::string& path) {
  const ProbeSite& site = plan.sites[index];
  const ProbeEventFields fields = probe_event_fields(plan, site);
  TracefsEvent event;
  event.name = tracefs_event_name(index);
  event.definition = path + ":" + to_hex(site.file_offset);
  if (site.ret) {
    event.definition += " " + fields.ret + "=%ax:x64";
    return event;
  }
  if (!plan.fetches.empty()) event.definition += " " + tracefs_fetch_args(plan.fetches);
  if (!fields.return_address.empty()) {
    event.definition += " " + to_string(return_address_fetch(site.compiled, fields.return_address));
  }
  for (size_t i = 0; i < fields.regs.size(); ++i) {
    event.definition += " " + fields.regs[i] + "=%" + kRegisterNames[i] + ":x64";
  }
  return event;
}

std::vector<TracefsEvent> probe_site_events(const ProbePlan& plan, const std::vector<std::string>& module_paths) {
  std::vector<TracefsEvent> events;
  for (size_t index = 0; index < plan.sites.size(); ++index) {
    events.push_back(probe_site_event(plan, index, module_paths[plan.sites[index].module_index]));
  }
  return events;
}

}  // namespace xref
