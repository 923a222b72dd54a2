// Opening a target process for a command: identity, address space, and the
// check that --bin (when given) is the executable the process runs.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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
  // "proc_exe_auto" without --bin; "digest_match" when --bin has the same
  // bytes; "build_id_match" when it is the same build in other bytes.
  std::string binary_match;
  std::vector<std::string> warnings;  // about --bin, for the output's warnings
};

Result<Target> open_target(const TargetOptions& options);

// The target's identity as a live command's document reports it at the
// end: process_json, plus whether the PID is still alive and still the
// same process (pid_alive_after, process_changed), rechecked now.
nlohmann::json process_json_after(const Target& target);

}  // namespace xref
