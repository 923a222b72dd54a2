#include "result.h"

namespace xref {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::internal: return "internal";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::no_such_process: return "no_such_process";
    case ErrorCode::process_exited: return "process_exited";
    case ErrorCode::process_changed: return "process_changed";
    case ErrorCode::not_a_user_process: return "not_a_user_process";
    case ErrorCode::binary_mismatch: return "binary_mismatch";
    case ErrorCode::address_unmapped: return "address_unmapped";
    case ErrorCode::permission_denied: return "permission_denied";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::file_error: return "file_error";
    case ErrorCode::elf_error: return "elf_error";
    case ErrorCode::not_an_instruction: return "not_an_instruction";
    case ErrorCode::breakpoint_collision: return "breakpoint_collision";
    case ErrorCode::limit_exceeded: return "limit_exceeded";
    case ErrorCode::unsupported_regex: return "unsupported_regex";
    case ErrorCode::pid_is_thread: return "pid_is_thread";
    case ErrorCode::sudo_user_cannot_ptrace: return "sudo_user_cannot_ptrace";
    case ErrorCode::debug_registers_do_not_fire: return "debug_registers_do_not_fire";
    case ErrorCode::debug_register_rule: return "debug_register_rule";
    case ErrorCode::debug_registers_exhausted: return "debug_registers_exhausted";
    case ErrorCode::unknown_symbol: return "unknown_symbol";
    case ErrorCode::not_data: return "not_data";
    case ErrorCode::read_only_address: return "read_only_address";
    case ErrorCode::bad_length: return "bad_length";
    case ErrorCode::event_unavailable: return "event_unavailable";
    case ErrorCode::frequency_too_high: return "frequency_too_high";
    case ErrorCode::capture_format: return "capture_format";
    case ErrorCode::capture_mismatch: return "capture_mismatch";
    case ErrorCode::empty_capture: return "empty_capture";
  }
  return "internal";
}

// Exit statuses are part of the CLI contract (docs/cli.md); never renumber.
int error_exit_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::internal: return 1;
    case ErrorCode::invalid_argument: return 2;
    case ErrorCode::no_such_process: return 3;
    case ErrorCode::process_exited: return 4;
    case ErrorCode::process_changed: return 5;
    case ErrorCode::not_a_user_process: return 6;
    case ErrorCode::binary_mismatch: return 7;
    case ErrorCode::address_unmapped: return 8;
    case ErrorCode::permission_denied: return 9;
    case ErrorCode::unsupported: return 10;
    case ErrorCode::file_error: return 11;
    case ErrorCode::elf_error: return 12;
    case ErrorCode::not_an_instruction: return 13;
    case ErrorCode::breakpoint_collision: return 14;
    case ErrorCode::limit_exceeded: return 15;
    case ErrorCode::unsupported_regex: return 16;
    case ErrorCode::pid_is_thread: return 17;
    case ErrorCode::sudo_user_cannot_ptrace: return 18;
    case ErrorCode::debug_registers_do_not_fire: return 19;
    case ErrorCode::debug_register_rule: return 20;
    case ErrorCode::debug_registers_exhausted: return 21;
    case ErrorCode::unknown_symbol: return 22;
    case ErrorCode::not_data: return 23;
    case ErrorCode::read_only_address: return 24;
    case ErrorCode::bad_length: return 25;
    case ErrorCode::event_unavailable: return 26;
    case ErrorCode::frequency_too_high: return 27;
    case ErrorCode::capture_format: return 28;
    case ErrorCode::capture_mismatch: return 29;
    case ErrorCode::empty_capture: return 30;
  }
  return 1;
}

}  // namespace xref
