// How code addresses are named in text: by the helper's own symbols and
// DWARF lines, or by a debugger's (a front end's batch, cached in serve).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xref::render {

// One code address of an event: where it is in its module, and in the process when known.
struct CodeAddress {
  std::string module;
  std::optional<uint64_t> static_va;
  std::optional<uint64_t> live;
};

// How a code address is shown: "handle_request+0x18 at sample_service.c:172".
struct Place {
  std::string function;
  uint64_t offset = 0;
  std::string file;
  uint32_t line = 0;
};

// nullopt: not known; the renderer then uses what the JSON carries (symbol, caller, static VA).
class Names {
 public:
  virtual ~Names() = default;
  virtual std::optional<Place> place(const CodeAddress& address) = 0;
};

}  // namespace xref::render
