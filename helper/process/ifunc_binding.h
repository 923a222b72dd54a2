// A GNU IFUNC symbol (strlen, memset, strcmp in libc) names a resolver that
// runs once, when the symbol is bound, and returns the implementation the
// process then calls (__strlen_avx2 on one CPU, __strlen_evex on another).
// A probe on the resolver sees nothing; the implementation is what the
// dynamic linker wrote into the live GOT slots of the process.
#pragma once

#include <sys/types.h>

#include <string>

#include "address_space.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

struct IfuncBinding {
  FunctionSymbol implementation;  // a function of the IFUNC's module
  std::string slot;               // where it was read: "JUMP_SLOT of strlen in names_target"
};

// The implementation `ifunc` (a function of `provider` with ifunc set) is
// bound to in the process: from the GOT slots of the modules that import it
// (JUMP_SLOT, GLOB_DAT), else the IRELATIVE slots of `provider` that its
// resolver filled, read from /proc/PID/mem. `what` ("--functions
// libc.so.6:strlen") starts the error when nothing has bound it yet (lazy
// binding, never called), which names the implementations there are.
Result<IfuncBinding> bound_ifunc(const AddressSpace& space, pid_t pid, const Module& provider,
                                 const ElfImage& provider_image, const FunctionSymbol& ifunc, const std::string& what);

// How a refusal names the code of `name`: itself, or for a GNU IFUNC the
// implementation the process bound, "strlen is bound to __strlen_evex
// here, and __strlen_evex" (a sentence goes on "did not disassemble ...").
std::string bound_code_name(const std::string& name, const std::string& implementation);

}  // namespace xref
