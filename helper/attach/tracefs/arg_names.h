// xref's own arguments of a uprobe event (the stack pointer, the return
// address, a ret's value, registers) share the event with the user's
// fetches, and field names in one event must differ.
#pragma once

#include <span>
#include <string>

#include "fetch_spec.h"

namespace xref {

// `preferred`, or "xref_" + it (repeated) while a fetch is called that.
std::string tracefs_free_arg_name(std::span<const FetchItem> fetches, const std::string& preferred);

}  // namespace xref
