// libbpf prints verifier logs and warnings to stderr by default; the helper
// keeps stderr for its own one-line messages unless XREF_DEBUG_BPF=1.
// Also the text of libbpf's error codes.
#pragma once

#include <string>

#include "result.h"

namespace xref {

void configure_libbpf_logging();
// libbpf's text for a negative error code it returned.
std::string libbpf_message(int error);
// Loading `program` ("the trace program") failed with `error`: the verifier
// refusing it (a bug to report), missing privileges, or a kernel without
// what it needs.
Error bpf_load_error(int error, const std::string& program);

}  // namespace xref
