// The address space of a running test process, read as xref reads it: by
// its pidfd-backed handle, then /proc/PID/maps.
#pragma once

#include <sys/types.h>

#include <string>

#include "address_space.h"
#include "process_identity.h"
#include "result.h"

namespace xref::test {

inline Result<AddressSpace> live_address_space(pid_t pid) {
  auto process = ProcessHandle::open(pid);
  if (!process) return process.error();
  return AddressSpace::read(*process);
}

// A function of a module the process maps, found by name (its first
// match), or nulls. The space keeps the image, so the pointer stays valid.
struct ModuleFunctionRef {
  const Module* module = nullptr;
  const FunctionSymbol* function = nullptr;
};
inline ModuleFunctionRef module_function(const AddressSpace& space, const std::string& module_name,
                                         const std::string& name) {
  ModuleFunctionRef found;
  found.module = space.find_module(module_name);
  if (found.module == nullptr) return found;
  auto image = space.image(*found.module);
  if (!image) return found;
  const auto functions = (*image)->find_functions(name);
  if (!functions.empty()) found.function = functions.front();
  return found;
}

}  // namespace xref::test
