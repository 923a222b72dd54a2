#include "lldb_symbols.h"

#include <climits>
#include <string>

#include "hex.h"

namespace xref::lldb_plugin {

nlohmann::json name_of(lldb::SBTarget target, uint64_t live) {
  nlohmann::json name = {{"address", to_hex(live)}};
  const nlohmann::json unknown = {{"address", to_hex(live)}, {"unknown", true}};
  lldb::SBAddress address = target.IsValid() ? target.ResolveLoadAddress(live) : lldb::SBAddress();
  if (!address.IsValid() || !address.GetSection().IsValid()) return unknown;
  const uint32_t scope = lldb::eSymbolContextFunction | lldb::eSymbolContextSymbol | lldb::eSymbolContextLineEntry;
  lldb::SBSymbolContext context = target.ResolveSymbolContextForAddress(address, scope);
  std::string function;
  lldb::SBAddress start;
  if (lldb::SBFunction found = context.GetFunction(); found.IsValid()) {
    const char* text = found.GetDisplayName() != nullptr ? found.GetDisplayName() : found.GetName();
    if (text != nullptr) function = text;
    start = found.GetStartAddress();
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
      if (part != nullptr && std::string(part).find(".cold") != std::string::npos) function = part;
    }
  } else if (lldb::SBSymbol symbol = context.GetSymbol(); symbol.IsValid()) {
    const char* text = symbol.GetDisplayName() != nullptr ? symbol.GetDisplayName() : symbol.GetName();
    if (text != nullptr) function = text;
    start = symbol.GetStartAddress();
  }
  if (function.empty()) return unknown;
  name["function"] = function;
  name["offset"] = start.IsValid() && start.GetFileAddress() <= address.GetFileAddress()
                       ? address.GetFileAddress() - start.GetFileAddress()
                       : 0;
  if (lldb::SBLineEntry line = context.GetLineEntry(); line.IsValid() && line.GetLine() != 0) {
    char path[PATH_MAX];
    if (line.GetFileSpec().GetPath(path, sizeof path) > 0) {
      name["file"] = path;
      name["line"] = line.GetLine();
    }
  }
  return name;
}

}  // namespace xref::lldb_plugin
