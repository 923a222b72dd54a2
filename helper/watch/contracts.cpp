#include "watch/contracts.h"

#include <set>

#include "disassembly.h"
#include "hex.h"
#include "process/ifunc_binding.h"
#include "sites/function_sites.h"
#include "sites/probe_site_check.h"
#include "watch/site_place.h"
#include "watch_abi.h"

namespace xref {
namespace {

struct Writer {
  const char* name;
  uint8_t contract;
};

constexpr Writer kWriters[] = {
    {"memcpy", XREF_CONTRACT_MEMCPY}, {"memmove", XREF_CONTRACT_MEMCPY}, {"mempcpy", XREF_CONTRACT_MEMCPY},
    {"memset", XREF_CONTRACT_MEMCPY}, {"strcpy", XREF_CONTRACT_STRCPY}, {"stpcpy", XREF_CONTRACT_STRCPY},
};

xref_watch_site contract_operand(uint8_t kind, uint8_t contract) {
  xref_watch_site operand{};
  operand.base_offset = XREF_WATCH_NO_REG;
  operand.index_offset = XREF_WATCH_NO_REG;
  operand.source_offset = XREF_WATCH_NO_REG;
  operand.scale = 1;
  operand.kind = kind;
  operand.width = 1;
  operand.source = XREF_SOURCE_AFTER;
  operand.contract = contract;
  return operand;
}

}  // namespace

void add_contract_sites(const Target& target, WatchPlan& plan, const std::vector<ScopedImage>& scope) {
  const Module* libc = target.space.find_module("libc.so.6");
  if (libc == nullptr) return;
  auto image = target.space.image(*libc);
  if (!image) {
    plan.warnings.push_back("contracts_missing: libc.so.6 could not be read: " + image.error().message);
    return;
  }
  const auto bias = target.space.load_bias(*libc);
  if (!bias) return;
  const uint32_t module = static_cast<uint32_t>(plan.modules.size());
  plan.modules.push_back(WatchModule{libc->path, libc->open_path, *bias, {}});
  std::set<uint64_t> entries, returns;
  SplitParts split;
  for (const Writer& writer : kWriters) {
    const std::vector<const FunctionSymbol*> found = (*image)->find_functions(writer.name);
    if (found.empty()) continue;
    FunctionSymbol code = *found.front();
    if (code.ifunc) {
      auto bound = bound_ifunc(target.space, target.process.pid(), *libc, **image, code, writer.name);
      if (!bound) {
        plan.warnings.push_back(std::string("contract_unbound: ") + writer.name +
                                " is not bound in the process yet (lazy binding): its writes show only as "
                                "unobserved changes");
        continue;
      }
      code = bound->implementation;
    }
    if (!entries.insert(code.start).second) {
      plan.contracts.push_back(std::string(writer.name) + " (" + code.name + ")");
      continue;
    }
    auto disassembled = disassemble(**image, code);
    if (!disassembled) {
      plan.warnings.push_back(std::string("contract_skipped: ") + writer.name + " (" + code.name +
                              ") does not disassemble: " + disassembled.error().message);
      continue;
    }
    auto add_entry = [&](WatchSite entry, const std::string& text) {
      entry.operand = contract_operand(XREF_STORE_CONTRACT_ENTRY, writer.contract);
      entry.function = writer.name;
      entry.text = text + " (libc, by contract)";
      entry.by_contract = true;
      plan.sites.push_back(std::move(entry));
    };
    std::string entered = "entry";
    if (auto entry = placed_site(**image, module, *bias, code.start)) {
      add_entry(std::move(*entry), writer.name);
    } else {
      // Its first instruction takes no uprobe: the PLT stubs that call it.
      size_t stubs = 0;
      for (const ScopedImage& scoped : scope) {
        for (const FunctionSymbol* stub : scoped.image->find_functions(std::string(writer.name) + "@plt")) {
          auto at_stub = placed_site(*scoped.image, scoped.module, plan.modules[scoped.module].load_bias, stub->start);
          if (!at_stub) continue;
          add_entry(std::move(*at_stub), std::string(writer.name) + "@plt");
          ++stubs;
        }
      }
      if (stubs == 0) continue;
      entered = std::to_string(stubs) + " PLT stub" + (stubs == 1 ? "" : "s");
      plan.warnings.push_back(std::string("contract_plt: ") + writer.name + " (" + code.name +
                              ") starts with an EVEX instruction no uprobe may go on: it is entered at its PLT "
                              "stubs, so its calls through a pointer or GOT (-fno-plt) show only as unobserved "
                              "changes");
    }
    const auto parts = split.code_parts(module, **image, *disassembled);
    std::vector<FunctionCode> all_parts = parts;
    size_t exits = 0;
    // Its own rets, and those of the functions it tail-jumps to.
    std::vector<FunctionExit> ends = function_exits(split, module, **image, parts);
    for (const FunctionExit& exit : std::vector<FunctionExit>(ends)) {
      if (exit.kind != FunctionExitKind::tail_jump) continue;
      const FunctionSymbol* callee = (*image)->function_at(exit.target_va);
      if (callee == nullptr) continue;
      auto callee_code = disassemble(**image, *callee);
      if (!callee_code) continue;
      const auto callee_parts = split.code_parts(module, **image, *callee_code);
      for (const FunctionExit& more : function_exits(split, module, **image, callee_parts)) ends.push_back(more);
    }
    for (const FunctionExit& exit : ends) {
      if (exit.kind != FunctionExitKind::ret || !returns.insert(exit.va).second) continue;
      auto placed = placed_site(**image, module, *bias, exit.va);
      if (!placed) continue;
      WatchSite ret = std::move(*placed);
      ret.operand = contract_operand(XREF_STORE_CONTRACT_RETURN, writer.contract);
      ret.function = code.name;
      ret.text = "ret";
      ret.by_contract = true;
      plan.sites.push_back(ret);
      ++exits;
    }
    plan.contracts.push_back(std::string(writer.name) + " (" + code.name + ", " + entered + ", " +
                             std::to_string(exits) + " returns)");
  }
}

}  // namespace xref
