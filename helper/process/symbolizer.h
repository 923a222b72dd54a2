// Live addresses of one process named for output: the static VA, the
// module, the function and, for a return address, the call instruction it
// returns to, verified by disassembly. Every command that shows where code
// ran (trace's entries, probe's callers) names addresses through this, and
// each address is worked out once (cached).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "address_space.h"
#include "disassembly.h"

namespace xref {

// Where a call came from, from the live return address read at entry (at
// [rsp]): the return site in its module, and the call instruction that ends
// exactly there when disassembly finds one (then `verified`).
struct CallSiteInfo {
  bool known = false;
  uint64_t call_site_va = 0;    // static; the return site when not verified
  bool verified = false;
  uint64_t caller_va = 0;       // the calling function's start (static), 0 if unknown
  std::string caller;           // its name
  std::string module;           // the module it is in, when not the main executable
  uint64_t call_site_live = 0;  // the call instruction in the process, 0 if not verified
};

// A code address as its module, static VA and the function holding it.
struct SymbolizedAddress {
  uint64_t static_va = 0;
  std::string module;    // its name, empty for the main executable
  std::string function;  // demangled, empty when no function holds the address
  uint64_t offset = 0;   // from the function's start

  // "fn", "libc.so.6:fn", or the static VA in hex when no function holds it.
  std::string name() const;
  // The same with the offset: "fn+0x1c", "libc.so.6:fn+0x4" ("fn" at its start).
  std::string name_with_offset() const;
};

class Symbolizer {
 public:
  // `main`: the module whose names need no "module:" prefix.
  Symbolizer(const AddressSpace& space, const Module* main) : space_(space), main_(main) {}

  CallSiteInfo call_site(uint64_t live_return_address);
  // nullopt when the address is in no module of the process.
  std::optional<SymbolizedAddress> code_address(uint64_t live_va) const;
  // A static VA of `module`, for output that names the sites it probed.
  SymbolizedAddress static_address(const Module& module, uint64_t static_va) const;

 private:
  std::shared_ptr<const FunctionCode> code_of(const Module& module, const FunctionSymbol& function);

  const AddressSpace& space_;
  const Module* main_;
  std::map<std::pair<const Module*, uint64_t>, std::shared_ptr<const FunctionCode>> code_cache_;
  std::map<uint64_t, CallSiteInfo> call_site_cache_;
};

}  // namespace xref
