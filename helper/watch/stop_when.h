// --stop-when in a debugger: the condition over `value` (the bytes a write
// left) and `old` (the bytes before it), lowered for the engines' BPF
// (bpf/watch_stop.bpf.h), and the write that made it hold read back.
#pragma once

#include <optional>

#include "bpf_abi.h"
#include "result.h"
#include "watch/engine.h"
#include "watch/request.h"
#include "watch_stop_abi.h"

namespace xref {

// nullopt without --stop-when; an error naming the option when the
// condition does not parse or names anything but value and old.
Result<std::optional<xref_filter_program>> compile_watch_stop(const WatchRequest& request);

// The stop the BPF program noted (its .bss), once it fired.
std::optional<WatchStop> read_watch_stop(const xref_watch_stop& noted);

}  // namespace xref
