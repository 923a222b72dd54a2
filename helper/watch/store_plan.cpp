// plan_store_sites: which store instructions get a uprobe, made live.
#include <algorithm>
#include <map>
#include <set>

#include "demangle.h"
#include "hex.h"
#include "parse_error_render.h"
#include "sites/probe_site_check.h"
#include "number_parse.h"
#include "x86_registers.h"
#include "watch/contracts.h"
#include "watch/detail.h"
#include "watch/plan.h"
#include "watch/site_place.h"

namespace xref {
namespace {

struct ScopeModule {
  const Module* module = nullptr;
  std::shared_ptr<const ElfImage> image;
  std::vector<const FunctionSymbol*> functions;  // empty: all of them
  std::string words;
};

// --in MODULE|FN...: whole modules, or functions of the executable (or
// MODULE:FN); none: the executable's code.
Result<std::vector<ScopeModule>> scope_of(const Target& target, const WatchRequest& request) {
  std::vector<ScopeModule> scope;
  auto module_entry = [&](const Module* module) -> ScopeModule& {
    for (ScopeModule& entry : scope) {
      if (entry.module == module) return entry;
    }
    scope.push_back(ScopeModule{module, nullptr, {}, {}});
    return scope.back();
  };
  const Module* main = target.space.main_module();
  if (main == nullptr) return make_error(ErrorCode::internal, "the process's executable is not among its mappings");
  if (request.in.empty()) {
    module_entry(main).words = "the executable's code";
  }
  for (const std::string& given : request.in) {
    if (const Module* module = target.space.find_module(given)) {
      ScopeModule& entry = module_entry(module);
      entry.functions.clear();
      entry.words = module->name();
      continue;
    }
    std::string module_name, function = given;
    if (const size_t colon = given.find(':'); colon != std::string::npos) {
      module_name = given.substr(0, colon);
      function = given.substr(colon + 1);
    }
    const Module* module = module_name.empty() ? main : target.space.find_module(module_name);
    if (module == nullptr) {
      return make_error(ErrorCode::invalid_argument, "--in " + quoted_text(given) + ": no module or function by that name",
                        "name a module as xref maps shows it (libfoo.so), or a function (fill_buffer, libfoo.so:fn)");
    }
    auto image = target.space.image(*module);
    if (!image) return image.error();
    const std::vector<const FunctionSymbol*> found = (*image)->find_functions(function);
    if (found.empty()) {
      return make_error(ErrorCode::invalid_argument,
                        "--in " + quoted_text(given) + ": no module, and no function of " + module->name() + ", by that name",
                        "name a module as xref maps shows it (libfoo.so), or a function as nm -C prints it");
    }
    ScopeModule& entry = module_entry(module);
    entry.functions.insert(entry.functions.end(), found.begin(), found.end());
    entry.words = entry.words.empty() ? given : entry.words + ", " + given;
  }
  for (ScopeModule& entry : scope) {
    auto image = target.space.image(*entry.module);
    if (!image) return image.error();
    entry.image = *image;
    if (entry.functions.empty()) entry.functions = entry.image->all_functions();
  }
  return scope;
}

// The range in the module's static VAs, when it lies there.
StaticRange static_range(const Target& target, const Module& module, const WatchRange& range) {
  StaticRange out;
  out.length = range.length;
  out.on_stack = range.on_stack;
  out.may_move = range.follow_slot.has_value();
  const LiveAddress live = target.space.resolve_live(range.address);
  for (const StaticCandidate& candidate : live.candidates) {
    if (candidate.module == &module) out.static_start = candidate.static_va;
  }
  return out;
}

// The pt_regs offset of the 64-bit register holding `name` ("eax", "r8d",
// "sil"), or XREF_WATCH_NO_REG.
uint16_t register_offset_of(std::string name) {
  static const std::map<std::string, std::string> legacy = {
      {"eax", "rax"}, {"ax", "rax"}, {"al", "rax"}, {"ebx", "rbx"}, {"bx", "rbx"}, {"bl", "rbx"},
      {"ecx", "rcx"}, {"cx", "rcx"}, {"cl", "rcx"}, {"edx", "rdx"}, {"dx", "rdx"}, {"dl", "rdx"},
      {"esi", "rsi"}, {"si", "rsi"}, {"sil", "rsi"}, {"edi", "rdi"}, {"di", "rdi"}, {"dil", "rdi"},
      {"ebp", "rbp"}, {"bp", "rbp"}, {"bpl", "rbp"}};
  if (const auto found = legacy.find(name); found != legacy.end()) name = found->second;
  if (name.size() > 2 && name[0] == 'r' && (name.back() == 'd' || name.back() == 'w' || name.back() == 'b')) name.pop_back();
  const auto reg = register_from_name(name);
  return reg ? register_pt_regs_offset(*reg) : XREF_WATCH_NO_REG;
}

// A store the kernel takes no uprobe on, seen at its next instruction: where
// its old value is there ("lock xadd dword ptr [rip + 0x2e8f], eax": eax).
void after_only_operand(const StoreSite& store, xref_watch_site& operand) {
  operand.kind = XREF_STORE_AFTER_ONLY;
  operand.contract = XREF_AFTER_ONLY_OLD_UNKNOWN;
  const std::string& text = store.text;
  const size_t comma = text.rfind(", ");
  const uint16_t last = comma == std::string::npos ? XREF_WATCH_NO_REG : register_offset_of(text.substr(comma + 2));
  // The instruction must leave the address registers as they were.
  auto keeps_address = [&](uint16_t changed) {
    return changed != operand.base_offset && changed != operand.index_offset;
  };
  if (text.find("xadd ") != std::string::npos && last != XREF_WATCH_NO_REG && keeps_address(last)) {
    operand.contract = XREF_AFTER_ONLY_OLD_REGISTER;
    operand.source_offset = last;
  } else if ((text.find("lock add ") == 0 || text.find("lock sub ") == 0 || text.find("lock xor ") == 0) &&
             comma != std::string::npos) {
    const std::string source = text.substr(comma + 2);
    operand.contract = text.find("lock add ") == 0   ? XREF_AFTER_ONLY_ADD
                       : text.find("lock sub ") == 0 ? XREF_AFTER_ONLY_SUB
                                                     : XREF_AFTER_ONLY_XOR;
    if (last != XREF_WATCH_NO_REG && keeps_address(last)) {
      operand.source_offset = last;
    } else if (auto value = parse_u64(source, "immediate"); value) {
      operand.source_offset = XREF_WATCH_NO_REG;
      operand.immediate = *value;
    } else if (auto negative = parse_i64(source, "immediate"); negative) {
      operand.source_offset = XREF_WATCH_NO_REG;
      operand.immediate = static_cast<uint64_t>(*negative);
    } else {
      operand.contract = XREF_AFTER_ONLY_OLD_UNKNOWN;
    }
  } else if (text.find("lock inc ") == 0 || text.find("lock dec ") == 0) {
    operand.contract = text.find("lock inc ") == 0 ? XREF_AFTER_ONLY_ADD : XREF_AFTER_ONLY_SUB;
    operand.source_offset = XREF_WATCH_NO_REG;
    operand.immediate = 1;
  } else if (text.find("cmpxchg ") != std::string::npos && text.find("cmpxchg16b") == std::string::npos &&
             text.find("cmpxchg8b") == std::string::npos && keeps_address(register_pt_regs_offset(Register::ax))) {
    operand.contract = XREF_AFTER_ONLY_CMPXCHG;
  }
}

std::string function_name(const ElfImage& image, uint64_t va, const std::string& fallback, uint64_t& offset) {
  if (const FunctionSymbol* function = image.function_containing(va)) {
    offset = va - function->start;
    return function->demangled;
  }
  return demangle(fallback);
}

}  // namespace

Result<void> plan_store_sites(const Target& target, const WatchRequest& request, WatchPlan& plan) {
  auto scope = scope_of(target, request);
  if (!scope) return scope.error();
  bool libc_in_scope = false;
  std::vector<ScopedImage> scoped;
  std::vector<std::string> scope_words;
  for (ScopeModule& entry : *scope) {
    auto table = find_store_sites(*entry.image, entry.functions);
    if (!table) return table.error();
    std::vector<StaticRange> ranges;
    for (const WatchRange& range : plan.ranges) ranges.push_back(static_range(target, *entry.module, range));
    const std::vector<uint32_t> probed = prune_store_sites(*table, ranges);
    const auto bias = target.space.load_bias(*entry.module);
    if (!bias) {
      return make_error(ErrorCode::internal, "no load bias for " + entry.module->path + ": its code is not mapped");
    }
    const uint32_t module = static_cast<uint32_t>(plan.modules.size());
    plan.modules.push_back(WatchModule{entry.module->path, entry.module->open_path, *bias, table->counts});
    if (entry.module->name() == "libc.so.6") libc_in_scope = true;
    scoped.push_back(ScopedImage{module, entry.image});
    scope_words.push_back(entry.words + ": " + std::to_string(table->counts.functions) + " functions of " +
                          entry.module->name());
    std::set<uint64_t> probed_vas;
    for (uint32_t index : probed) probed_vas.insert(table->sites[index].va);
    std::map<uint64_t, size_t> site_at;  // static VA -> plan.sites index
    for (uint32_t index : probed) {
      const StoreSite& store = table->sites[index];
      if (kernel_refuses_uprobe(*entry.image, store.va) || evex_at(*entry.image, store.va)) {
        ++plan.refused;
        continue;
      }
      auto offset = entry.image->file_offset_of(store.va);
      if (!offset) return offset.error();
      WatchSite site;
      site.module = module;
      site.static_va = store.va;
      site.live_va = store.va + *bias;
      site.file_offset = *offset;
      site.operand = store.operand;
      // No base register: disp is an absolute static VA (rip-relative, or
      // a non-PIE absolute address): made live.
      if (site.operand.base_offset == XREF_WATCH_NO_REG) site.operand.disp += static_cast<int64_t>(*bias);
      if (store.immediate_is_static_va) site.operand.immediate += *bias;
      const std::string fallback = store.function < table->functions.size() ? table->functions[store.function].name : "";
      site.function = function_name(*entry.image, store.va, fallback, site.function_offset);
      site.text = store.text;
      site_at[store.va] = plan.sites.size();
      plan.sites.push_back(std::move(site));
    }
    // AFTER sites: the instruction after a store whose new value is only
    // known once it ran, unless that one is probed already (any probe of the
    // thread completes its write in flight).
    for (uint32_t index : probed) {
      const StoreSite& store = table->sites[index];
      const auto at = site_at.find(store.va);
      if (!store.needs_after || at == site_at.end()) continue;
      const uint64_t next = store.va + store.size;
      if (const auto there = site_at.find(next); there != site_at.end()) {
        plan.sites[at->second].operand.pair = static_cast<uint32_t>(there->second);
        continue;
      }
      auto placed = store.after_ok ? placed_site(*entry.image, module, *bias, next) : std::nullopt;
      if (!placed) {
        ++plan.after_missing;
        continue;
      }
      WatchSite after = std::move(*placed);
      after.operand = xref_watch_site{};
      after.operand.base_offset = after.operand.index_offset = after.operand.source_offset = XREF_WATCH_NO_REG;
      after.operand.kind = XREF_STORE_AFTER;
      after.operand.pair = static_cast<uint32_t>(at->second);
      after.function = plan.sites[at->second].function;
      after.function_offset = plan.sites[at->second].function_offset + store.size;
      after.text = "(after " + store.text + ")";
      plan.sites[at->second].operand.pair = static_cast<uint32_t>(plan.sites.size());
      site_at[next] = plan.sites.size();
      plan.sites.push_back(std::move(after));
      ++plan.after_sites;
    }
    // Stores the kernel takes no uprobe on (lock prefix): seen at their next
    // instruction alone, when no other probe is there.
    for (uint32_t index : table->after_only) {
      const StoreSite& store = table->sites[index];
      const uint64_t next = store.va + store.size;
      auto placed = site_at.count(next) ? std::nullopt : placed_site(*entry.image, module, *bias, next);
      if (!placed) {
        ++plan.refused;
        continue;
      }
      WatchSite after = std::move(*placed);
      after.operand = store.operand;
      if (after.operand.base_offset == XREF_WATCH_NO_REG) after.operand.disp += static_cast<int64_t>(*bias);
      after_only_operand(store, after.operand);
      const std::string fallback = store.function < table->functions.size() ? table->functions[store.function].name : "";
      after.function = function_name(*entry.image, store.va, fallback, after.function_offset);
      after.static_va = store.va;  // the writer is the store; the probe is at `next`
      after.live_va = store.va + *bias;
      after.text = store.text;
      site_at[next] = plan.sites.size();
      plan.sites.push_back(std::move(after));
      ++plan.after_only;
    }
    plan.refused += table->counts.refused >= table->after_only.size() ? table->counts.refused - table->after_only.size() : 0;
  }
  if (!libc_in_scope) add_contract_sites(target, plan, scoped);
  if (request.callers) {
    std::vector<std::shared_ptr<const ElfImage>> images(plan.modules.size());
    for (const ScopedImage& entry : scoped) images[entry.module] = entry.image;
    plan_site_callers(images, plan);
  }
  plan.scope.clear();
  for (const std::string& words : scope_words) plan.scope += (plan.scope.empty() ? "" : "; ") + words;
  if (plan.after_missing > 0) {
    plan.warnings.push_back("after_missing: " + std::to_string(plan.after_missing) +
                            " stores are followed by an instruction no uprobe may go on (EVEX): their new bytes are "
                            "read at the thread's next probed instruction, or at the end");
  }
  if (plan.refused > 0) {
    plan.warnings.push_back("refused: " + std::to_string(plan.refused) +
                            " stores take no uprobe (a lock prefix or a segment override the kernel refuses, or "
                            "EVEX): writes by them show only as unobserved changes");
  }
  if (plan.sites.size() > XREF_WATCH_MAX_SITES) {
    return make_error(ErrorCode::limit_exceeded,
                      std::to_string(plan.sites.size()) + " store sites; at most " +
                          std::to_string(XREF_WATCH_MAX_SITES),
                      "narrow the scope with --in FUNCTION...");
  }
  return {};
}

}  // namespace xref
