// Errors as values: every library function in shared/ and the helper engine
// returns Result<T>; only the edges (main, command handlers) turn an Error
// into a message and an exit code.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace xref {

// Each code has a stable JSON name and a distinct process exit status
// (see error_code_name / error_exit_status in error.cpp).
enum class ErrorCode {
  internal,            // a bug or an unexpected system failure
  invalid_argument,    // malformed number, spec or expression; a value over a bound
  no_such_process,     // the PID does not exist
  process_exited,      // the process went away during the operation
  process_changed,     // the PID now names another process (reuse or exec)
  not_a_user_process,  // kernel thread or zombie
  binary_mismatch,     // --bin is not the executable the process runs
  address_unmapped,    // a VA outside every mapping or not file-backed
  permission_denied,   // missing privileges for the target or the kernel facility
  unsupported,         // the host lacks a needed kernel facility
  file_error,          // a file could not be opened or read
  elf_error,           // a file is not a usable ELF image
  not_an_instruction,  // an address inside an instruction, not at its start
  breakpoint_collision,  // a probe would sit on an enabled debugger breakpoint location
  limit_exceeded,        // an input over a safety limit: a file's size, JSON nesting
  unsupported_regex,     // a regex construct without a linear-time match (a backreference)
  pid_is_thread,         // the PID is a thread's ID, not its process's
  sudo_user_cannot_ptrace,  // under sudo: a target the user who ran sudo could not ptrace
  debug_registers_do_not_fire,  // watch --backend hw: the live self-test counted no (or not every) write
  debug_register_rule,          // watch --backend hw: a range x86 debug registers cannot watch (length, alignment, reads)
  debug_registers_exhausted,    // watch --backend hw: more ranges than free debug registers per thread
  unknown_symbol,        // watch: no data symbol by that name in the modules searched
  not_data,              // watch: the address is code (an executable mapping), not data
  read_only_address,     // watch: the address lies in a mapping no one can write
  bad_length,            // watch: a length of 0, over the bound, or past the end of its mapping
  event_unavailable,     // profile: the host has no such sampling event (cycles without a hardware PMU, lbr)
  frequency_too_high,    // profile: --freq above the kernel's perf_event_max_sample_rate
  capture_format,        // profile: a .xprof of an unknown schema_version, truncated or malformed
  capture_mismatch,      // profile: a capture of another build than the binary given (--other needed)
  empty_capture,         // profile: a capture (or a selection of it) without one sample
};

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;  // one line: what went wrong
  std::string hint;     // one line: what to do about it (may be empty)
  int column = 0;       // 1-based column in the parsed text, 0 when not a parse error
};

const char* error_code_name(ErrorCode code);
int error_exit_status(ErrorCode code);

inline Error make_error(ErrorCode code, std::string message, std::string hint = {}) {
  return Error{code, std::move(message), std::move(hint), 0};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(storage_); }

 private:
  std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace xref
