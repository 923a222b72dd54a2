// What `xref profile --pid PID ...` asks for (docs/profile.md): the
// capture's options, checked where CLI11 reads them and again together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command/process_command.h"
#include "result.h"

namespace xref {

struct ProfileRequest {
  uint64_t duration_ms = 10000;   // --duration 10s (perf's habit: until Ctrl-C needs --duration 0)
  uint64_t frequency_hz = 99;     // --freq / --hz: 99, off the kernel's 100 Hz tick, as perf users use
  std::string callers = "dwarf";  // dwarf | fp | lbr | none
  std::string event;              // empty: cycles where a hardware PMU exists, else cpu-clock
  std::vector<uint32_t> threads;  // --threads; empty: every thread
  std::string out = "xref.xprof";
};

struct ProfileCommandOptions : ProcessCommandOptions {
  ProfileRequest request;
};

void add_profile_options(CLI::App& command, ProfileCommandOptions& options);
Result<void> validate_profile_request(const ProfileRequest& request);

}  // namespace xref
