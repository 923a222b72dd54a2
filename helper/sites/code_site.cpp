#include "sites/code_site.h"

#include "hex.h"

namespace xref {

Result<CodeSite> place_code_address(const Target& target, uint64_t live_va, const std::string& what) {
  const LiveAddress live = target.space.resolve_live(live_va);
  if (live.candidates.empty() || !live.candidates.front().file_backed || live.candidates.front().module == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      what + " " + to_hex(live_va) + " is not in file-backed code of the process (" +
                          address_kind_name(live.kind) + ")",
                      "JIT or anonymous code cannot be traced with uprobes");
  }
  const StaticCandidate& candidate = live.candidates.front();
  auto image = target.space.image(*candidate.module);
  if (!image) return image.error();
  const FunctionSymbol* function = (*image)->function_containing(candidate.static_va);
  if (function == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      what + " " + to_hex(live_va) + " (" + candidate.module->name() + ":" +
                          to_hex(candidate.static_va) + ") is in no known function",
                      "the module has neither symbols nor .eh_frame ranges there");
  }
  CodeSite site;
  site.module = candidate.module;
  site.image = *image;
  site.live_va = live_va;
  site.static_va = candidate.static_va;
  site.function = *function;
  site.at_entry = candidate.static_va == function->start;
  return site;
}

}  // namespace xref
