#include "trace/planning/roles.h"

#include "sites/probe_site_check.h"
#include "hex.h"

namespace xref {
namespace {

// The order in which the roles of one address act: the return of the
// call just before it, a --stop, the entry of the function starting here,
// then what the instruction itself does (call, jump, ret).
int role_rank(uint8_t kind) {
  switch (kind) {
    case XREF_PROBE_RETURN_SITE:
    case XREF_PROBE_RESUME: return 0;
    case XREF_PROBE_STOP: return 1;
    case XREF_PROBE_ENTRY:
    case XREF_PROBE_UNWIND_CHECK: return 2;
  }
  return 3;
}

// `role` becomes `probe` in its place in the chain.
void replace_role(PlannedProbe& role, PlannedProbe probe) {
  probe.head = role.head;
  probe.next = role.next;
  role = std::move(probe);
}

Result<void> merge_role(PlanState& state, size_t head, PlannedProbe probe, const std::string& what) {
  TracePlan& plan = state.plan;
  std::vector<size_t> chain;
  plan.for_each_role(head, [&](size_t index, const PlannedProbe&) { chain.push_back(index); });
  for (size_t index : chain) {
    PlannedProbe& existing = plan.probes[index];
    state.last_role = index;
    // Back-to-back calls: the return site of one call is the call site
    // (or a ret, a tail jump) of the next; the first role sees the
    // return before acting.
    if (probe.kind == XREF_PROBE_RETURN_SITE && index == head) {
      if (existing.kind == XREF_PROBE_RETURN_SITE || (existing.flags & XREF_PROBE_F_RETURN_SITE)) return {};
      existing.flags |= XREF_PROBE_F_RETURN_SITE;
      existing.return_function_id = probe.function_id;
      return {};
    }
    if (existing.kind == XREF_PROBE_RETURN_SITE && index == head && role_rank(probe.kind) > 0) {
      const uint32_t returning = existing.function_id;
      replace_role(existing, std::move(probe));
      existing.flags |= XREF_PROBE_F_RETURN_SITE;
      existing.return_function_id = returning;
      return {};
    }
    if (existing.kind == probe.kind && existing.function_id == probe.function_id) {
      existing.start = existing.start || probe.start;
      if (existing.fetches.empty()) existing.fetches = probe.fetches;
      return {};
    }
    // A tail jump that is both the function's exit and a tail-call site:
    // one role, the call-site view (the target's entry, marked [tail]).
    if ((existing.kind == XREF_PROBE_TAIL_EXIT && probe.kind == XREF_PROBE_TAIL_SITE) ||
        (existing.kind == XREF_PROBE_TAIL_SITE && probe.kind == XREF_PROBE_TAIL_EXIT)) {
      if (existing.kind == XREF_PROBE_TAIL_EXIT) {
        const uint8_t return_flags = existing.flags & XREF_PROBE_F_RETURN_SITE;
        const uint32_t returning = existing.return_function_id;
        replace_role(existing, std::move(probe));
        existing.flags |= return_flags;
        existing.return_function_id = returning;
      }
      return {};
    }
    if ((existing.kind == XREF_PROBE_STOP && probe.start) || (probe.kind == XREF_PROBE_STOP && existing.start)) {
      return make_error(ErrorCode::invalid_argument, what + " is where windows open",
                        "give --stop an address the window reaches after its start");
    }
  }
  if (chain.size() >= XREF_PROBE_MAX_ROLES) {
    return make_error(ErrorCode::internal,
                      what + " would play more than " + std::to_string(XREF_PROBE_MAX_ROLES) + " roles");
  }
  // Insert by rank: before the first role that acts later.
  const size_t added = plan.probes.size();
  state.last_role = added;
  probe.head = false;
  probe.next = -1;
  plan.probes.push_back(std::move(probe));
  PlannedProbe& role = plan.probes[added];
  int32_t previous = -1;
  for (size_t index : chain) {
    if (role_rank(plan.probes[index].kind) > role_rank(role.kind)) break;
    previous = static_cast<int32_t>(index);
  }
  if (previous < 0) {
    PlannedProbe& old_head = plan.probes[head];
    role.head = true;
    role.next = static_cast<int32_t>(head);
    old_head.head = false;
    // The return of the call before belongs to whatever acts first.
    if (old_head.flags & XREF_PROBE_F_RETURN_SITE) {
      old_head.flags &= static_cast<uint8_t>(~XREF_PROBE_F_RETURN_SITE);
      role.flags |= XREF_PROBE_F_RETURN_SITE;
      role.return_function_id = old_head.return_function_id;
    }
  } else {
    PlannedProbe& before = plan.probes[static_cast<size_t>(previous)];
    role.next = before.next;
    before.next = static_cast<int32_t>(added);
  }
  return {};
}

// A role whose instruction the kernel will not probe (a LOCK prefix, a
// notrack jump). A return site moves to the next instruction when the
// refused one only touches memory or is padding (it neither branches nor
// moves rsp): the callee's frame is still the innermost there, so the
// return is seen exactly, one instruction late (a resume probe, likewise).
// Any other role is left out with a warning, and a call whose return
// cannot be seen pushes a frame that ends silently (trace_abi.h,
// XREF_PROBE_F_UNSEEN_RETURN).
Result<void> place_refused_role(PlanState& state, const FunctionCode& code, const TracedFunction& function,
                                uint64_t va, uint8_t kind, uint8_t flags, bool start,
                                const std::vector<FetchItem>& fetches, const std::string& what) {
  const Instruction* instruction = instruction_at(code, va);
  const std::string text = instruction ? instruction->text : "?";
  if ((kind == XREF_PROBE_RETURN_SITE || kind == XREF_PROBE_RESUME) && instruction != nullptr &&
      (instruction->kind == InstructionKind::other || instruction->kind == InstructionKind::nop) &&
      text.find("sp") == std::string::npos && is_instruction_start(code, instruction->end())) {
    return add_role(state, code, function, instruction->end(), kind, flags, start, fetches);
  }
  if (start) {
    return make_error(ErrorCode::unsupported,
                      what + " (" + text + "): no uprobe may go on a LOCK- or segment-prefixed instruction (the "
                             "kernel refuses it) nor on an EVEX (AVX-512) one (the kernel runs it wrongly out of "
                             "line), and windows open there",
                      "start the window at another function");
  }
  if (kind == XREF_PROBE_RETURN_SITE && state.last_role < state.plan.probes.size() &&
      state.plan.probes[state.last_role].kind == XREF_PROBE_CALL_SITE) {
    state.plan.probes[state.last_role].flags |= XREF_PROBE_F_UNSEEN_RETURN;
  }
  state.plan.warnings.push_back(what + " (" + text + ") cannot be probed: the kernel refuses uprobes on LOCK- and "
                                "segment-prefixed instructions and runs EVEX (AVX-512) ones wrongly out of line; " +
                                (kind == XREF_PROBE_RETURN_SITE ? "that call's return is not shown"
                                                                : "that event is not seen"));
  return {};
}

}  // namespace

std::optional<size_t> head_at(const TracePlan& plan, uint32_t module_index, uint64_t va) {
  for (size_t index = 0; index < plan.probes.size(); ++index) {
    const PlannedProbe& probe = plan.probes[index];
    if (probe.head && probe.static_va == va && probe.module_index == module_index &&
        probe.kind != XREF_PROBE_URETPROBE) {
      return index;
    }
  }
  return std::nullopt;
}

Result<void> add_role(PlanState& state, const FunctionCode& code, const TracedFunction& function, uint64_t va,
                      uint8_t kind, uint8_t flags, bool start, const std::vector<FetchItem>& fetches) {
  const std::string what = std::string(kind == XREF_PROBE_STOP ? "--stop" : "probe") + " at " + to_hex(va);
  const uint32_t module_index = kind == XREF_PROBE_STOP ? 0 : function.module_index;
  const ElfImage& image = state.image_of(module_index);
  if (auto site = check_probe_site(image, code, va, what); !site) return site;
  if (kernel_refuses_uprobe(image, va)) {
    return place_refused_role(state, code, function, va, kind, flags, start, fetches, what);
  }
  auto offset = image.file_offset_of(va);
  if (!offset) return offset.error();
  PlannedProbe probe;
  probe.module_index = module_index;
  probe.static_va = va;
  probe.file_offset = *offset;
  probe.function_id = function.id;
  probe.kind = kind;
  probe.flags = flags;
  probe.start = start;
  probe.fetches = fetches;
  const auto head = kind == XREF_PROBE_URETPROBE ? std::nullopt : head_at(state.plan, module_index, va);
  if (!head) {
    state.last_role = state.plan.probes.size();
    state.plan.probes.push_back(std::move(probe));
    return {};
  }
  return merge_role(state, *head, std::move(probe), what);
}

void set_tail_target(PlanState& state, const TracedFunction& function, uint64_t va, uint64_t target_va) {
  PlannedProbe& role = state.plan.probes[state.last_role];
  if (role.static_va == va && role.module_index == function.module_index && role.kind == XREF_PROBE_TAIL_EXIT &&
      role.function_id == function.id) {
    role.tail_target_va = target_va;
  }
}

const char* role_label(uint8_t kind) {
  switch (kind) {
    case XREF_PROBE_ENTRY: return "entry of";
    case XREF_PROBE_RET: return "ret of";
    case XREF_PROBE_TAIL_EXIT: return "tail exit of";
    case XREF_PROBE_STOP: return "stop";
    case XREF_PROBE_URETPROBE: return "uretprobe of";
    case XREF_PROBE_CALL_SITE: return "call site of";
    case XREF_PROBE_RETURN_SITE: return "return site of";
    case XREF_PROBE_TAIL_SITE: return "tail-call site of";
    case XREF_PROBE_UNWIND_CHECK: return "unwind check";
    case XREF_PROBE_RESUME: return "resume after";
  }
  return "probe";
}

}  // namespace xref
