#include "lldb_symbols.h"

#include <string>

#include "hex.h"

namespace xref::lldb_plugin {
namespace {

CodePlace place_of(lldb::SBTarget target, lldb::SBAddress address) {
  CodePlace place;
  if (!address.IsValid()) return place;
  const uint32_t scope = lldb::eSymbolContextFunction | lldb::eSymbolContextSymbol | lldb::eSymbolContextLineEntry;
  lldb::SBSymbolContext context = target.ResolveSymbolContextForAddress(address, scope);
  lldb::SBAddress start;
  if (lldb::SBFunction function = context.GetFunction(); function.IsValid()) {
    const char* name = function.GetDisplayName();
    if (name == nullptr) name = function.GetName();
    if (name != nullptr) place.function = name;
    start = function.GetStartAddress();
    // LLDB 19 starts a GCC function that has a .cold part at its lowest
    // part; the ELF symbol holding the address starts the part it is in
    // (the entry, or "[clone .cold]"): offsets count from there.
    lldb::SBSymbol symbol = context.GetSymbol();
    const uint64_t at = address.GetFileAddress();
    if (symbol.IsValid() && symbol.GetStartAddress().GetFileAddress() <= at &&
        at < symbol.GetEndAddress().GetFileAddress() &&
        symbol.GetStartAddress().GetFileAddress() != start.GetFileAddress()) {
      start = symbol.GetStartAddress();
      const char* part = symbol.GetDisplayName();
      if (part != nullptr && std::string(part).find(".cold") != std::string::npos) place.function = part;
    }
  } else if (lldb::SBSymbol symbol = context.GetSymbol(); symbol.IsValid()) {
    const char* name = symbol.GetDisplayName();
    if (name == nullptr) name = symbol.GetName();
    if (name != nullptr) place.function = name;
    start = symbol.GetStartAddress();
  }
  if (start.IsValid() && start.GetFileAddress() <= address.GetFileAddress()) {
    place.offset = address.GetFileAddress() - start.GetFileAddress();
  }
  if (lldb::SBLineEntry line = context.GetLineEntry(); line.IsValid() && line.GetLine() != 0) {
    const char* file = line.GetFileSpec().GetFilename();
    if (file != nullptr) place.file_line = std::string(file) + ":" + std::to_string(line.GetLine());
  }
  return place;
}

}  // namespace

LldbSymbols::LldbSymbols(lldb::SBTarget target) : target_(target) {
  const uint32_t count = target_.GetNumBreakpoints();
  for (uint32_t index = 0; index < count; ++index) {
    lldb::SBBreakpoint breakpoint = target_.GetBreakpointAtIndex(index);
    const size_t locations = breakpoint.GetNumLocations();
    for (size_t at = 0; at < locations; ++at) {
      lldb::SBBreakpointLocation location = breakpoint.GetLocationAtIndex(static_cast<uint32_t>(at));
      const lldb::addr_t address = location.GetLoadAddress();
      if (address != LLDB_INVALID_ADDRESS) {
        breakpoint_locations_.emplace(address, static_cast<uint32_t>(breakpoint.GetID()));
      }
    }
  }
}

lldb::SBModule LldbSymbols::module_named(const std::string& name) {
  if (name.empty()) return target_.GetModuleAtIndex(0);  // the main executable
  lldb::SBModule module = target_.FindModule(lldb::SBFileSpec(name.c_str(), false));
  if (module.IsValid()) return module;
  const uint32_t count = target_.GetNumModules();
  for (uint32_t index = 0; index < count; ++index) {
    lldb::SBModule candidate = target_.GetModuleAtIndex(index);
    const char* file = candidate.GetFileSpec().GetFilename();
    if (file != nullptr && name == file) return candidate;
  }
  return {};
}

lldb::SBAddress LldbSymbols::resolve(const EventAddress& address) {
  if (address.live) {
    lldb::SBAddress resolved = target_.ResolveLoadAddress(*address.live);
    if (resolved.IsValid() && resolved.GetSection().IsValid()) return resolved;
  }
  if (address.static_va) {
    lldb::SBModule module = module_named(address.module);
    if (module.IsValid()) return module.ResolveFileAddress(*address.static_va);
  }
  return {};
}

std::optional<uint64_t> LldbSymbols::live(const EventAddress& address) {
  if (address.live) return address.live;
  if (!address.static_va) return std::nullopt;
  lldb::SBModule module = module_named(address.module);
  if (!module.IsValid()) return std::nullopt;
  const lldb::addr_t load = module.ResolveFileAddress(*address.static_va).GetLoadAddress(target_);
  if (load == LLDB_INVALID_ADDRESS) return std::nullopt;
  return load;
}

CodePlace LldbSymbols::describe(const EventAddress& address) { return place_of(target_, resolve(address)); }

std::vector<uint32_t> LldbSymbols::breakpoints_at(uint64_t live_address) {
  std::vector<uint32_t> ids;
  auto [begin, end] = breakpoint_locations_.equal_range(live_address);
  for (auto it = begin; it != end; ++it) ids.push_back(it->second);
  return ids;
}

std::string describe_address(lldb::SBTarget target, lldb::SBAddress address) {
  const CodePlace place = place_of(target, address);
  std::string text;
  if (!place.function.empty()) text = place.function + (place.offset != 0 ? "+" + to_hex(place.offset) : "");
  if (!place.file_line.empty()) text += (text.empty() ? "" : " at ") + place.file_line;
  return text;
}

}  // namespace xref::lldb_plugin
