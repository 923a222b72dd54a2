#include "manual/exit_statuses.h"

#include <string>

#include "result.h"

namespace xref::manual {
namespace {

// docs/cli.md, "Exit statuses", in short. A switch without a default: a
// new ErrorCode without its meaning here fails the build (-Wswitch).
const char* meaning(ErrorCode code) {
  switch (code) {
    case ErrorCode::internal: return "a bug or an unexpected system failure";
    case ErrorCode::invalid_argument: return "bad usage: an unknown option, a malformed number, a value over a bound";
    case ErrorCode::no_such_process: return "no process has that PID";
    case ErrorCode::process_exited: return "the process went away during the operation";
    case ErrorCode::process_changed: return "the PID now names another process (reuse) or another executable (exec)";
    case ErrorCode::not_a_user_process: return "a kernel thread or a zombie";
    case ErrorCode::binary_mismatch: return "--bin is not the executable the process runs";
    case ErrorCode::address_unmapped: return "an address outside every file-backed module";
    case ErrorCode::permission_denied:
      return "missing privileges for the target, the kernel facility or a file; xref run set-user-ID or set-group-ID";
    case ErrorCode::unsupported: return "the host lacks a needed kernel facility";
    case ErrorCode::file_error: return "a file could not be opened or read, or is not a regular file";
    case ErrorCode::elf_error: return "a file is not a usable x86-64 ELF image";
    case ErrorCode::not_an_instruction: return "an address inside an instruction, or not code at all";
    case ErrorCode::breakpoint_collision: return "in a debugger: a probe would sit on an enabled breakpoint location";
    case ErrorCode::limit_exceeded: return "an input over a safety limit: a saved trace's size, JSON nesting";
    case ErrorCode::unsupported_regex: return "--mark-regex needs what a linear-time matcher cannot do";
    case ErrorCode::pid_is_thread: return "the PID is a thread's ID, not its process's";
    case ErrorCode::sudo_user_cannot_ptrace: return "under sudo: a process the user who ran sudo could not ptrace";
    case ErrorCode::debug_registers_do_not_fire: return "watch --backend hw: debug registers do not fire on this host";
    case ErrorCode::debug_register_rule: return "watch --backend hw: a range debug registers cannot watch";
    case ErrorCode::debug_registers_exhausted: return "watch --backend hw: more ranges than free debug registers";
    case ErrorCode::unknown_symbol: return "watch: no data symbol by that name in the modules searched";
    case ErrorCode::not_data: return "watch: the address is code, not data";
    case ErrorCode::read_only_address: return "watch: the address lies in a read-only mapping";
    case ErrorCode::bad_length: return "watch: a length of 0, over the bound, or past the end of its mapping";
    case ErrorCode::event_unavailable: return "profile: the host has no such sampling event";
    case ErrorCode::frequency_too_high: return "profile: --freq above the kernel's perf_event_max_sample_rate";
    case ErrorCode::capture_format: return "profile: a capture file of an unknown version, truncated or malformed";
    case ErrorCode::capture_mismatch: return "profile: a capture of another build than the binary given";
    case ErrorCode::empty_capture: return "profile: a capture without a sample";
  }
  return "";
}

}  // namespace

std::vector<ExitStatus> common_exit_statuses() {
  std::vector<ExitStatus> statuses{{0, "success"}};
  // error_code_name answers "internal" past the last code: the codes are
  // the values from 0 until then.
  for (int value = 0;; ++value) {
    const auto code = static_cast<ErrorCode>(value);
    if (value > 0 && std::string(error_code_name(code)) == error_code_name(ErrorCode::internal)) break;
    statuses.push_back({error_exit_status(code), std::string(meaning(code)) + " (" + error_code_name(code) + ")"});
  }
  return statuses;
}

}  // namespace xref::manual
