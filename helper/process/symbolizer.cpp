#include "process/symbolizer.h"

#include "hex.h"
#include "process/resolve.h"

namespace xref {

std::shared_ptr<const FunctionCode> Symbolizer::code_of(const Module& module, const FunctionSymbol& function) {
  std::shared_ptr<const FunctionCode>& code = code_cache_[{&module, function.start}];
  if (code) return code;
  auto image = space_.image(module);
  if (!image) return nullptr;
  auto disassembled = disassemble(**image, function);
  if (disassembled) code = std::make_shared<const FunctionCode>(std::move(*disassembled));
  return code;
}

CallSiteInfo Symbolizer::call_site(uint64_t live_return_address) {
  if (auto cached = call_site_cache_.find(live_return_address); cached != call_site_cache_.end()) {
    return cached->second;
  }
  CallSiteInfo info;
  const ResolvedAddress resolved = resolve_address(space_, live_return_address);
  if (!resolved.candidates.empty()) {
    const ResolvedCandidate& candidate = resolved.candidates.front();
    info.known = true;
    info.call_site_va = candidate.candidate.static_va;
    if (candidate.candidate.module != main_) info.module = candidate.candidate.module->name();
    if (candidate.function) {
      info.caller_va = candidate.function->start;
      info.caller = candidate.function->demangled;
      const auto code = code_of(*candidate.candidate.module, *candidate.function);
      if (code && candidate.candidate.static_va > 0) {
        // The call is the instruction that ends exactly at the return address.
        const Instruction* before = instruction_containing(*code, candidate.candidate.static_va - 1);
        if (before != nullptr && before->kind == InstructionKind::call &&
            before->end() == candidate.candidate.static_va) {
          info.call_site_va = before->address;
          info.verified = true;
          info.call_site_live = live_return_address - before->size;
        }
      }
    }
  }
  call_site_cache_[live_return_address] = info;
  return info;
}

std::optional<SymbolizedAddress> Symbolizer::code_address(uint64_t live_va) const {
  const ResolvedAddress resolved = resolve_address(space_, live_va);
  if (resolved.candidates.empty()) return std::nullopt;
  const ResolvedCandidate& candidate = resolved.candidates.front();
  SymbolizedAddress named;
  named.static_va = candidate.candidate.static_va;
  if (candidate.candidate.module != main_) named.module = candidate.candidate.module->name();
  if (candidate.function) {
    named.function = candidate.function->demangled;
    named.offset = candidate.function_offset;
  }
  return named;
}

SymbolizedAddress Symbolizer::static_address(const Module& module, uint64_t static_va) const {
  SymbolizedAddress named;
  named.static_va = static_va;
  if (&module != main_) named.module = module.name();
  auto image = space_.image(module);
  if (!image) return named;
  if (const FunctionSymbol* function = (*image)->function_containing(static_va)) {
    named.function = function->demangled;
    named.offset = static_va - function->start;
  }
  return named;
}

std::string SymbolizedAddress::name() const {
  return (module.empty() ? "" : module + ":") + (function.empty() ? to_hex(static_va) : function);
}

std::string SymbolizedAddress::name_with_offset() const {
  if (function.empty() || offset == 0) return name();
  return name() + "+" + to_hex(offset);
}

}  // namespace xref
