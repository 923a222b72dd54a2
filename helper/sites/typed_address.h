// A code address as a user types it for a probe or for where a window
// opens, placed in its module:
//
//   NAME, MODULE:NAME            the function's entry
//   NAME+OFF, MODULE:NAME+OFF    an instruction inside it (OFF hex or decimal)
//   0xVA, MODULE:0xVA            a static VA, as nm and objdump print it
//   0xVA from a debugger         a live address, as the debugger's
//                                `disassemble` and `bt` print it (MODULE:0xVA
//                                stays static there: a module names a file)
//
// An address inside a function must start an instruction; the error says
// the nearest starts in the form the user typed. A static VA that is a live
// address of the process (or the other way round in a debugger) is refused
// with the conversion spelt out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "result.h"
#include "sites/function_names.h"
#include "sites/probe_modules.h"

namespace xref {

struct TypedAddress {
  ModuleFunction function;  // the function holding it
  uint64_t static_va = 0;
  bool at_entry = false;    // the function's first instruction
  std::optional<uint64_t> live;  // typed as a live address (from a debugger)
};

// "NAME+OFF" -> {NAME, OFF} when the text after the last '+' is a number
// and a name comes before it ("operator+" has none after it); nullopt
// otherwise.
std::optional<std::pair<std::string, uint64_t>> split_symbol_offset(const std::string& text);

// `text` placed as above; `live_bare`: the request comes from a debugger,
// where a bare 0xVA is live. `what` starts errors ("probe", "--start").
// A GNU IFUNC named by NAME or NAME+OFF is the implementation the process
// bound.
Result<TypedAddress> place_typed_address(ProbeModules& modules, const std::string& text, const std::string& what,
                                         bool live_bare);

// `text` names an instruction rather than a function: NAME+OFF, or with
// `live_bare` a bare 0xVA (a live address may fall anywhere in a function).
bool names_instruction_address(const std::string& text, bool live_bare);

}  // namespace xref
