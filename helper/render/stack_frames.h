// JSON of what a live record carries besides its values, the same for
// every command that records (probe's samples and stacks, watch's writes):
// a stack frame named by its function (a return address by the call just
// before it, as callers are), and the general registers by name.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "process/symbolizer.h"

namespace xref {

// {"live", "kind": "pc"|"return", "function", "module", "static_va"} for the
// hit's pc; a return address adds "call_site_va", "call_site_verified",
// "call_site_live".
nlohmann::json stack_frame_json(Symbolizer& symbolizer, uint64_t live, bool pc);

// {"r15": "0x..", ... "ss": "0x.."}: struct pt_regs order, 21 words.
nlohmann::json registers_json(std::span<const uint64_t> words);

}  // namespace xref
