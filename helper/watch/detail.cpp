#include "watch/detail.h"

#include <bpf/libbpf.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

#include "cfa_rule.h"
#include "filter_expr.h"
#include "hex.h"

namespace xref {
namespace {

// "--filter: unknown name 'x'" (the parse error keeps its column).
Error for_option(Error error, const std::string& option) {
  error.message = option + ": " + error.message;
  return error;
}

bool integer_length(uint32_t length) { return length == 1 || length == 2 || length == 4 || length == 8; }

// Whether the lowered filter reads slot `slot`.
bool reads_slot(const FilterProgram& program, uint8_t slot) {
  return std::any_of(program.instructions.begin(), program.instructions.end(), [&](const xref_filter_insn& insn) {
    return insn.lhs_slot == slot || insn.rhs_slot == slot;
  });
}

// The stack map's frames of `id` (as many as the walk found).
std::vector<uint64_t> stack_of(const bpf_map* stack_traces, int32_t id,
                               std::map<int32_t, std::vector<uint64_t>>* cache) {
  if (id < 0 || stack_traces == nullptr) return {};
  if (cache != nullptr) {
    if (auto found = cache->find(id); found != cache->end()) return found->second;
  }
  const size_t depth = bpf_map__value_size(stack_traces) / sizeof(uint64_t);
  std::vector<uint64_t> frames(depth, 0);
  const uint32_t key = static_cast<uint32_t>(id);
  if (bpf_map__lookup_elem(stack_traces, &key, sizeof key, frames.data(), frames.size() * sizeof(uint64_t), 0) != 0) {
    return {};
  }
  frames.erase(std::find(frames.begin(), frames.end(), 0), frames.end());
  if (cache != nullptr) (*cache)[id] = frames;
  return frames;
}

}  // namespace

bool watch_detail_wanted(const WatchRequest& request) {
  return !request.fetch.empty() || !request.filter.empty() || request.regs || request.callers;
}

Result<void> plan_watch_detail(const WatchRequest& request, WatchPlan& plan) {
  if (!request.fetch.empty()) {
    auto fetches = parse_fetch_spec(request.fetch);
    if (!fetches) return for_option(fetches.error(), "--fetch");
    plan.fetches = *fetches;
  }
  if (request.filter.empty()) {
    if (plan.fetches.size() > XREF_FETCH_MAX_ITEMS) {
      return make_error(ErrorCode::invalid_argument, "--fetch: " + std::to_string(plan.fetches.size()) + " values",
                        "at most " + std::to_string(XREF_FETCH_MAX_ITEMS) + " values per watch");
    }
    return {};
  }
  // The filter's `value` and `old` take the two slots after the fetches.
  if (plan.fetches.size() + 2 > XREF_FETCH_MAX_ITEMS) {
    return make_error(ErrorCode::invalid_argument, "--fetch: " + std::to_string(plan.fetches.size()) + " values",
                      "with --filter at most " + std::to_string(XREF_FETCH_MAX_ITEMS - 2) +
                          " values (value and old take two slots)");
  }
  for (const FetchItem& item : plan.fetches) {
    if (item.name == kWatchValueName || item.name == kWatchOldName) {
      return make_error(ErrorCode::invalid_argument, "--fetch " + item.name + ": the name is the watch's own",
                        "name the fetch otherwise: --filter reads `value` and `old` from the watched range");
    }
  }
  std::vector<FilterVariable> variables = filter_variables(plan.fetches);
  variables.push_back(FilterVariable{kWatchValueName, false, 0, 0});
  variables.push_back(FilterVariable{kWatchOldName, false, 0, 0});
  auto parsed = parse_filter(request.filter, variables);
  if (!parsed) {
    Error error = for_option(parsed.error(), "--filter");
    error.hint = "a watch filters on value, old (the range's bytes after and before the write) and the --fetch names";
    return error;
  }
  auto lowered = lower_filter(*parsed);
  if (!lowered) return for_option(lowered.error(), "--filter");
  const auto value_slot = static_cast<uint8_t>(plan.fetches.size());
  if (reads_slot(*lowered, value_slot) || reads_slot(*lowered, static_cast<uint8_t>(value_slot + 1))) {
    for (const WatchRange& range : plan.ranges) {
      if (integer_length(range.length)) continue;
      return make_error(ErrorCode::invalid_argument,
                        "--filter: `value` and `old` are integers of the range's 1, 2, 4 or 8 bytes; " +
                            range.spelled + " is " + std::to_string(range.length) + " bytes",
                        "watch that part with ADDR:LEN (e.g. " + range.spelled + ":8), or filter on --fetch names");
    }
  }
  plan.filter = std::move(*lowered);
  return {};
}

void plan_site_callers(const std::vector<std::shared_ptr<const ElfImage>>& images, WatchPlan& plan) {
  plan.site_callers.assign(plan.sites.size(), xref_watch_site_caller{});
  for (size_t index = 0; index < plan.sites.size(); ++index) {
    const WatchSite& site = plan.sites[index];
    if (site.by_contract) continue;  // a contract's entry: [rsp], read by the program itself
    if (site.module >= images.size() || !images[site.module]) {
      ++plan.callers_unknown;
      continue;
    }
    auto rule = cfa_rule_at(*images[site.module], site.static_va);
    if (!rule || (rule->reg != CfaRule::Register::rsp && rule->reg != CfaRule::Register::rbp)) {
      ++plan.callers_unknown;
      continue;
    }
    // The return address sits just below the CFA (as probe's --callers reads it).
    xref_watch_site_caller& out = plan.site_callers[index];
    out.caller = 2;
    out.base = rule->reg == CfaRule::Register::rbp ? 1 : 0;
    out.offset = static_cast<int32_t>(rule->offset - 8);
  }
  if (plan.callers_unknown > 0) {
    plan.warnings.push_back("callers_unknown: " + std::to_string(plan.callers_unknown) +
                            " store sites have no .eh_frame CFA rule based on rsp or rbp: their writes' stacks are "
                            "the frame-pointer walk alone");
  }
}

void size_watch_stack_map(bpf_map* stack_traces, bool callers) {
  bpf_map__set_max_entries(stack_traces, callers ? XREF_WATCH_MAX_STACKS : 1);
}

Result<void> fill_watch_detail_maps(const WatchPlan& plan, bpf_map* fetches, bpf_map* filter) {
  const uint32_t zero = 0;
  if (!plan.fetches.empty()) {
    xref_fetch items[XREF_FETCH_MAX_ITEMS];
    std::memset(items, 0, sizeof items);
    const std::vector<xref_fetch> compiled = compile_fetches(plan.fetches);
    std::copy(compiled.begin(), compiled.end(), items);
    if (bpf_map__update_elem(fetches, &zero, sizeof zero, items, sizeof items, BPF_ANY) != 0) {
      return make_error(ErrorCode::internal, "writing the watch's fetches failed");
    }
  }
  if (plan.filter) {
    const xref_filter_program program = to_bpf_program(*plan.filter);
    if (bpf_map__update_elem(filter, &zero, sizeof zero, &program, sizeof program, BPF_ANY) != 0) {
      return make_error(ErrorCode::internal, "writing the watch's filter failed");
    }
  }
  return {};
}

void decode_watch_detail(const void* data, size_t size, const WatchPlan& plan, const bpf_map* stack_traces,
                         WatchRecord& record) {
  if (size < sizeof(xref_watch_record) + sizeof(xref_watch_detail)) return;
  xref_watch_detail detail;
  std::memcpy(&detail, static_cast<const uint8_t*>(data) + sizeof(xref_watch_record), sizeof detail);
  record.has_detail = true;
  const size_t fetched = std::min<size_t>(detail.fetch_count, plan.fetches.size());
  record.fetches =
      fetched_values(plan.fetches, fetched, detail.failed, detail.values, detail.errors, &detail.strings[0][0]);
  if (detail.has_regs) record.regs.assign(detail.regs, detail.regs + XREF_WATCH_REG_WORDS);
  record.caller = detail.caller;
  if (detail.stack_id >= 0) {
    record.stack = watch_stack_frames(stack_of(stack_traces, detail.stack_id, nullptr), detail.caller);
  }
}

std::vector<uint64_t> watch_stack_frames(const std::vector<uint64_t>& walked, uint64_t caller) {
  if (walked.empty()) return {};  // not walked: no pc to put the caller under
  if (caller == 0 || (walked.size() > 1 && walked[1] == caller)) return walked;
  return {walked[0], caller};
}

std::vector<uint64_t> walked_stack(const bpf_map* stack_traces, int64_t id) {
  return id < 0 || id > INT32_MAX ? std::vector<uint64_t>{} : stack_of(stack_traces, static_cast<int32_t>(id), nullptr);
}

std::vector<WatchStackCount> read_watch_stacks(const bpf_map* stacks, const bpf_map* stack_traces) {
  std::vector<WatchStackCount> out;
  std::map<int32_t, std::vector<uint64_t>> cache;
  xref_watch_stack_key key{}, next{};
  const xref_watch_stack_key* previous = nullptr;
  while (bpf_map__get_next_key(stacks, previous, &next, sizeof next) == 0) {
    uint64_t writes = 0;
    if (bpf_map__lookup_elem(stacks, &next, sizeof next, &writes, sizeof writes, 0) == 0) {
      const auto id = static_cast<int32_t>(next.key & ((1u << XREF_WATCH_STACK_ID_BITS) - 1));
      const uint64_t caller = next.key >> XREF_WATCH_STACK_ID_BITS;
      out.push_back(WatchStackCount{next.site, writes, watch_stack_frames(stack_of(stack_traces, id, &cache), caller)});
    }
    key = next;
    previous = &key;
  }
  std::sort(out.begin(), out.end(),
            [](const WatchStackCount& a, const WatchStackCount& b) { return a.writes > b.writes; });
  return out;
}

}  // namespace xref
