// Opening a target process for a command: identity, address space, and the
// check that --bin (when given) is the executable the process runs.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "address_space.h"
#include "process_identity.h"
#include "result.h"

namespace xref {

struct TargetOptions {
  pid_t pid = 0;
  std::string bin;  // empty: use the process's own executable
};

struct Target {
  ProcessHandle process;
  AddressSpace space;
  // "proc_exe_auto" without --bin; "digest_match" when --bin has the same bytes.
  std::string binary_match;
};

Result<Target> open_target(const TargetOptions& options);

}  // namespace xref
