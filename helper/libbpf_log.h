// libbpf prints verifier logs and warnings to stderr by default; the helper
// keeps stderr for its own one-line messages unless XREF_DEBUG_BPF=1.
#pragma once

namespace xref {

void configure_libbpf_logging();

}  // namespace xref
