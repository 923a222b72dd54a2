#include "probe/plan.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "cfa_rule.h"
#include "disassembly.h"
#include "filter_expr.h"
#include "hex.h"
#include "number_parse.h"
#include "process/ifunc_binding.h"
#include "sites/breakpoints.h"
#include "sites/function_glob.h"
#include "sites/function_names.h"
#include "sites/function_sites.h"
#include "sites/probe_site_check.h"
#include "sites/typed_address.h"

namespace xref {
namespace {

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

// An address as typed (sites/typed_address.h): a function, NAME+OFF, a
// static VA, or from a debugger a live one.
Result<ProbeAddress> resolve_address(ProbeModules& modules, const std::string& given, bool from_debugger,
                                     std::vector<std::string>& warnings) {
  auto placed = place_typed_address(modules, given, "probe", from_debugger);
  if (!placed) return placed.error();
  if (!placed->function.implementation.empty()) warnings.push_back(ifunc_warning(given, placed->function, "probing"));
  ProbeAddress address;
  address.given = given;
  address.module_index = placed->function.module_index;
  address.static_va = placed->static_va;
  address.function = placed->function;
  address.implementation = placed->function.implementation;
  address.at_entry = placed->at_entry;
  return address;
}

// The instruction after the refused first one of a function, when the
// refused one is no branch and does not name rsp: there the stack is as at
// the entry. nullopt otherwise.
std::optional<uint64_t> entry_past_refused(const ElfImage& image, const FunctionCode& code, uint64_t va) {
  const Instruction* first = instruction_at(code, va);
  if (first == nullptr || first->kind != InstructionKind::other || first->text.find("sp") != std::string::npos) {
    return std::nullopt;
  }
  const Instruction* next = instruction_at(code, first->end());
  if (next == nullptr || kernel_refuses_uprobe(image, next->address)) return std::nullopt;
  return next->address;
}

// bp:N: one address per location of debugger breakpoint N, named "bp:N"
// (one location) or by the location's id ("bp:N.2").
Result<std::vector<ProbeAddress>> breakpoint_addresses(ProbeModules& modules, const DebuggerContext& debugger,
                                                       uint32_t id) {
  auto sites = breakpoint_sites(modules.target(), debugger, id, "probe");
  if (!sites) return sites.error();
  std::vector<ProbeAddress> addresses;
  for (size_t index = 0; index < sites->size(); ++index) {
    CodeSite& site = (*sites)[index];
    ProbeAddress address;
    address.given = "bp:" + std::to_string(id) + (sites->size() == 1 ? "" : "." + std::to_string(index + 1));
    address.module_index = modules.index_of(site.module, site.image);
    address.static_va = site.static_va;
    address.function = site.function;
    address.at_entry = site.static_va == site.function.start;
    addresses.push_back(std::move(address));
  }
  return addresses;
}

// The addresses as typed, resolved; bp:N adds N to the breakpoints the
// debugger disables while the probe runs. An address typed again is counted
// on its first copy, not resolved again: 3,000 copies cost one lookup.
Result<std::vector<ProbeAddress>> resolve_addresses(ProbePlan& plan, const ProbeRequest& request) {
  std::vector<ProbeAddress> addresses;
  std::map<std::string, std::pair<size_t, size_t>> typed;  // as typed -> the addresses it became [first, end)
  for (const std::string& given : request.addresses) {
    if (auto again = typed.find(given); again != typed.end()) {
      for (size_t index = again->second.first; index < again->second.second; ++index) {
        ++addresses[index].spellings.front().second;
      }
      continue;
    }
    const size_t first = addresses.size();
    if (is_function_glob(given) && !breakpoint_reference(given)) {
      auto expansion = expand_function_glob(plan.modules, given, "probe", request.max_addresses, "--max-addresses");
      if (!expansion) return expansion.error();
      plan.globs.push_back({given, expansion->functions.size()});
      if (const std::string skipped = glob_skipped_warning(*expansion); !skipped.empty()) {
        plan.warnings.push_back(skipped);
      }
      for (const ModuleFunction& function : expansion->functions) {
        ProbeAddress address;
        const std::string module = split_module(given).first;
        address.given = (module.empty() ? "" : module + ":") + function.demangled;
        address.module_index = function.module_index;
        address.static_va = function.start;
        address.function = function;
        address.implementation = function.implementation;
        address.at_entry = true;
        addresses.push_back(std::move(address));
      }
    } else if (auto id = breakpoint_reference(given)) {
      auto located = breakpoint_addresses(plan.modules, request.debugger, *id);
      if (!located) return located.error();
      addresses.insert(addresses.end(), located->begin(), located->end());
      plan.breakpoints_to_disable.push_back(*id);
    } else {
      auto address = resolve_address(plan.modules, given, request.debugger.present, plan.warnings);
      if (!address) return address.error();
      addresses.push_back(std::move(*address));
    }
    for (size_t index = first; index < addresses.size(); ++index) addresses[index].spellings = {{addresses[index].given, 1}};
    typed[given] = {first, addresses.size()};
  }
  return addresses;
}

// Spellings merged into one probe site are said once per site: "foo (3000
// times) and 0x1139 are one probe site ...".
void warn_duplicates(ProbePlan& plan) {
  for (const ProbeSite& site : plan.sites) {
    if (site.ret) continue;
    const ProbeAddress& address = plan.addresses[site.address];
    uint64_t typed = 0;
    std::string names;
    for (size_t i = 0; i < address.spellings.size(); ++i) {
      const auto& [spelling, times] = address.spellings[i];
      typed += times;
      names += (i == 0 ? "" : i + 1 == address.spellings.size() ? " and " : ", ") + spelling +
               (times > 1 ? " (" + std::to_string(times) + " times)" : "");
    }
    if (typed < 2) continue;
    const bool one_spelling = address.spellings.size() == 1;
    plan.warnings.push_back("duplicate_address: " + (one_spelling ? address.given + ", typed " + std::to_string(typed) +
                                                                        " times, is"
                                                                  : names + " are") +
                            " one probe site (" + address.function.demangled + ", probe VA " + to_hex(site.static_va) +
                            "): probed and counted once" + (one_spelling ? "" : ", reported as " + address.given));
  }
}

// Every site's live address, for the breakpoint-collision guard.
std::vector<LiveProbe> live_probes(const ProbePlan& plan) {
  std::vector<LiveProbe> probes;
  for (const ProbeSite& site : plan.sites) {
    auto live = plan.modules.target().space.live_from_static(*plan.modules[site.module_index].module, site.static_va);
    if (!live) continue;
    const ProbeAddress& address = plan.addresses[site.address];
    probes.push_back({*live, (site.ret ? "ret of " : "") + address.given + " (" + address.function.demangled + ")"});
  }
  return probes;
}

// A filter over the fetched values, lowered for the BPF program.
Result<FilterProgram> compile_filter(const std::string& text, const std::vector<FetchItem>& fetches,
                                     const std::string& option) {
  auto filter = parse_filter(text, filter_variables(fetches));
  if (!filter) return with_context(filter.error(), option);
  auto lowered = lower_filter(*filter);
  if (!lowered) return with_context(lowered.error(), option);
  return *lowered;
}

// The slot of a fetched NAME, for --group-by NAME and --hist NAME.
Result<uint8_t> fetch_slot(const std::vector<FetchItem>& fetches, const std::string& name, const std::string& option) {
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (fetches[i].name == name) return static_cast<uint8_t>(i);
  }
  return make_error(ErrorCode::invalid_argument, option + " " + name + ": no fetch is named '" + name + "'",
                    "name a value of --fetch, e.g. --fetch '" + name + "=%di:u64'");
}

}  // namespace

Result<ProbePlan> plan_probe(const Target& target, const ProbeRequest& request) {
  if (request.addresses.empty()) {
    return make_error(ErrorCode::invalid_argument, "no address to probe",
                      "name one or more: a function (sym, module:sym) or an instruction's static VA (0x1234)");
  }
  auto modules = ProbeModules::of_process(target);
  if (!modules) return modules.error();
  ProbePlan plan{std::move(*modules), {}, {}, {}, std::nullopt, std::nullopt, request.group_by, 0, request.hist,
                 request.stacks, {}, {}, {}};

  if (!request.fetch.empty()) {
    auto fetches = parse_fetch_spec(request.fetch);
    if (!fetches) return with_context(fetches.error(), "--fetch");
    if (fetches->size() > XREF_FETCH_MAX_ITEMS) {
      return make_error(ErrorCode::invalid_argument,
                        "--fetch: at most " + std::to_string(XREF_FETCH_MAX_ITEMS) + " values per probe");
    }
    plan.fetches = *fetches;
  }
  if (!request.filter.empty()) {
    auto filter = compile_filter(request.filter, plan.fetches, "--filter");
    if (!filter) return filter.error();
    plan.filter = *filter;
  }
  if (!request.stop_when.empty()) {
    auto stop_when = compile_filter(request.stop_when, plan.fetches, "--stop-when");
    if (!stop_when) return stop_when.error();
    plan.stop_filter = *stop_when;
  }
  uint8_t group = XREF_GROUP_NONE;
  uint8_t group_slot = XREF_NO_SLOT;
  uint8_t group_string_slot = 0;
  if (request.group_by == "ret") {
    group = XREF_GROUP_RET;
  } else if (request.group_by == "caller") {
    group = XREF_GROUP_CALLER;
  } else if (request.group_by == "tid") {
    group = XREF_GROUP_TID;
  } else if (!request.group_by.empty()) {
    auto slot = fetch_slot(plan.fetches, request.group_by, "--group-by");
    if (!slot) return slot.error();
    group = XREF_GROUP_FETCH;
    group_slot = *slot;
    if (plan.fetches[*slot].type.is_string()) {
      group = XREF_GROUP_STRING;
      group_string_slot = static_cast<uint8_t>(fetch_string_slots(plan.fetches)[*slot]);
      plan.group_string_bound = plan.fetches[*slot].type.string_bound;
    }
  }
  uint8_t hist_slot = XREF_NO_SLOT;
  if (!request.hist.empty()) {
    auto slot = fetch_slot(plan.fetches, request.hist, "--hist");
    if (!slot) return slot.error();
    if (plan.fetches[*slot].type.is_string()) {
      return make_error(ErrorCode::invalid_argument, "--hist " + request.hist + ": '" + request.hist + "' is a string",
                        "draw a histogram of a number, or --group-by the string");
    }
    hist_slot = *slot;
  }

  auto resolved = resolve_addresses(plan, request);
  if (!resolved) return resolved.error();
  SplitParts split;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> address_at;  // (module, probe VA) -> its address
  for (auto address = resolved->begin(); address != resolved->end(); ++address) {
    const std::string& given = address->given;
    const ElfImage& image = plan.modules.image(address->module_index);
    auto code = disassemble(image, address->function);
    if (!code) return with_context(code.error(), "probe " + given + ": disassembling " + address->function.demangled);
    if (!code->complete()) {
      return make_error(ErrorCode::not_an_instruction,
                        "probe " + given + ": " + bound_code_name(address->function.demangled, address->implementation) +
                            " did not disassemble cleanly (undecodable bytes or branches into instructions)",
                        "xref will not guess instruction boundaries; probe another address");
    }
    const std::string what = "probe " + given + " (" + to_hex(address->static_va) + ")";
    if (auto site_ok = check_probe_site(image, *code, address->static_va, what); !site_ok) return site_ok.error();
    // An entry whose first instruction takes no uprobe but leaves rsp and
    // the flow alone is counted at the next one: [rsp] is still the caller's.
    std::optional<uint64_t> moved_entry;
    if (kernel_refuses_uprobe(image, address->static_va)) {
      moved_entry = address->at_entry ? entry_past_refused(image, *code, address->static_va) : std::nullopt;
      if (!moved_entry) {
        return make_error(ErrorCode::unsupported,
                          what + ": no uprobe may go on an instruction with a lock or segment prefix, nor on an "
                                 "EVEX (AVX-512) one, which the kernel runs wrongly out of line",
                          "probe the instruction before or after it");
      }
      plan.warnings.push_back(what + ": its first instruction (" + instruction_at(*code, address->static_va)->text +
                              ") takes no uprobe; counted at the next one, " + to_hex(*moved_entry) +
                              ", where the stack is the same");
    }

    ProbeSite site;
    site.address = static_cast<uint32_t>(plan.addresses.size());
    site.module_index = address->module_index;
    // At a function's entry, the 5-byte nop after endbr64 is probed when
    // there is one: the same stack pointer, a far cheaper uprobe. Not with
    // --stop-when: the kernel runs such a probe through a trampoline of its
    // own, and the stopped thread would be there, outside the function.
    site.static_va = moved_entry                                           ? *moved_entry
                     : address->at_entry && request.stop_when.empty() ? entry_probe_va(*code)
                                                                      : address->static_va;
    // Another spelling of a site already planned: one uprobe, one count.
    const auto [same, fresh] = address_at.try_emplace({site.module_index, site.static_va}, site.address);
    if (!fresh) {
      auto& spellings = plan.addresses[same->second].spellings;
      spellings.insert(spellings.end(), address->spellings.begin(), address->spellings.end());
      continue;
    }
    auto offset = image.file_offset_of(site.static_va);
    if (!offset) return with_context(offset.error(), what);
    site.file_offset = *offset;
    xref_probe_site& compiled = site.compiled;
    std::memset(&compiled, 0, sizeof compiled);
    compiled.address = site.address;
    compiled.group = group;
    compiled.group_slot = group_slot;
    compiled.string_slot = group_string_slot;
    compiled.hist_slot = hist_slot;
    compiled.flags = static_cast<uint8_t>((request.regs ? XREF_SITE_F_REGS : 0) |
                                          (request.stacks != 0 ? XREF_SITE_F_STACKS : 0));
    compiled.fetch_count = static_cast<uint8_t>(plan.fetches.size());
    const std::vector<xref_fetch> fetches = compile_fetches(plan.fetches);
    std::copy(fetches.begin(), fetches.end(), compiled.fetches);
    if (request.callers || group == XREF_GROUP_CALLER) {
      if (address->at_entry) {
        compiled.caller = XREF_CALLER_AT_SP;
        address->caller_method = "exact";
      } else if (auto rule = cfa_rule_at(image, address->static_va);
                 rule && (rule->reg == CfaRule::Register::rsp || rule->reg == CfaRule::Register::rbp)) {
        // The return address sits just below the CFA.
        compiled.caller = XREF_CALLER_CFA;
        compiled.caller_base = rule->reg == CfaRule::Register::rbp ? XREF_CALLER_BASE_BP : XREF_CALLER_BASE_SP;
        compiled.caller_offset = static_cast<int32_t>(rule->offset - 8);
        address->caller_method = "inferred";
      } else {
        address->caller_note = rule ? "the frame at " + to_hex(address->static_va) + " is based on DWARF register " +
                                          std::to_string(rule->dwarf_register) + ", not rsp or rbp"
                                    : rule.error().message;
        plan.warnings.push_back("callers_unknown: " + given + ": " + address->caller_note);
      }
    }
    // --stacks at an entry: the frame-pointer walk misses the caller, whose
    // return address is at [rsp] (read even without --callers).
    if (request.stacks != 0 && address->at_entry) compiled.caller = XREF_CALLER_AT_SP;
    plan.sites.push_back(site);

    if (group == XREF_GROUP_RET) {
      const auto parts = split.code_parts(address->module_index, image, *code);
      for (const FunctionExit& exit : function_exits(split, address->module_index, image, parts)) {
        if (exit.kind != FunctionExitKind::ret) continue;
        ProbeSite ret;
        ret.address = site.address;
        ret.module_index = address->module_index;
        ret.static_va = exit.va;
        auto ret_offset = image.file_offset_of(exit.va);
        if (!ret_offset) return with_context(ret_offset.error(), what + ": its ret at " + to_hex(exit.va));
        ret.file_offset = *ret_offset;
        ret.ret = true;
        std::memset(&ret.compiled, 0, sizeof ret.compiled);
        ret.compiled.address = site.address;
        ret.compiled.flags = XREF_SITE_F_RET;
        ret.compiled.hist_slot = XREF_NO_SLOT;
        ret.compiled.group_slot = XREF_NO_SLOT;
        plan.sites.push_back(ret);
      }
    }
    plan.addresses.push_back(*address);
  }
  warn_duplicates(plan);
  if (plan.sites.size() > XREF_PROBE_MAX_SITES) {
    return make_error(ErrorCode::invalid_argument,
                      std::to_string(plan.sites.size()) + " probe sites needed; the limit is " +
                          std::to_string(XREF_PROBE_MAX_SITES),
                      "probe fewer addresses");
  }
  if (request.debugger.present && !request.allow_breakpoint_collision) {
    if (auto clear = check_breakpoint_collisions(live_probes(plan), request.debugger, plan.breakpoints_to_disable);
        !clear) {
      return clear.error();
    }
  }
  return plan;
}

}  // namespace xref
