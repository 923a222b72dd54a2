// Who names code addresses for the renderer. The helper names them from the
// module's ELF symbols and DWARF lines (helper_names.h); a debugger front
// end names them with its own symbols, sent as a batch and cached in serve,
// so each user reads their debugger's spellings through one renderer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xref::render {

// One code address of an event: where it is in its module ("" is the
// executable), and in the process when known.
struct CodeAddress {
  std::string module;
  std::optional<uint64_t> static_va;
  std::optional<uint64_t> live;

  bool operator==(const CodeAddress&) const = default;
};

// How a code address is shown: "handle_request+0x18 at sample_service.c:172".
struct Place {
  std::string function;  // as demangled in full; "" when no function holds it
  uint64_t offset = 0;   // from the function's start
  std::string file;      // as the line table writes it (a full path, often); "" without lines
  uint32_t line = 0;
  // Named by the debugger (the front end's batch): shown as it spells the
  // function, never shortened; the helper's own names get short labels
  // (name_labels.h).
  bool debugger = false;
};

// nullopt: not known; the renderer then uses what the JSON carries (symbol,
// caller, static VA).
class Names {
 public:
  virtual ~Names() = default;
  virtual std::optional<Place> place(const CodeAddress& address) = 0;
};

// Names nothing: text from the JSON alone.
class NoNames final : public Names {
 public:
  std::optional<Place> place(const CodeAddress&) override { return std::nullopt; }
};

}  // namespace xref::render
