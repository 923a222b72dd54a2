// Reading the target's memory and its threads' stack pointers for watch:
// the ranges' bytes at arm and at each drain (unobserved changes), a
// --follow slot's pointer, which anonymous mappings are thread stacks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "result.h"

namespace xref {

// `length` bytes at `address` of `pid` (process_vm_readv), all or an error.
Result<std::vector<uint8_t>> read_target_bytes(pid_t pid, uint64_t address, uint64_t length);

// The stack pointer of each thread of `pid` that sits in a system call
// (/proc/PID/task/TID/syscall); threads running now are not listed.
std::vector<uint64_t> thread_stack_pointers(pid_t pid);

}  // namespace xref
