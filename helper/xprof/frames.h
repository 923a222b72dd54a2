// What a report calls a frame: the function a location falls in, or, for a
// location no symbol covers, its address (a return address's call
// instruction, as the pictures name it); `[kernel]` above a stack sampled
// in kernel mode. Every report groups by these keys, so a function is one
// row whatever its locations, and reports agree on names.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xprof/profile.h"

namespace xref {

struct FrameKey {
  enum class Kind : uint8_t { function, address, kernel };
  Kind kind = Kind::function;
  uint32_t function = 0;         // kind function: index in Profile::functions
  uint32_t module = kNoModule;   // kind address
  uint64_t address = 0;          // kind address
  auto operator<=>(const FrameKey&) const = default;
};

// The address a location is named by: a return address by its call
// instruction (the address - 1, inside the call even when the call is its
// function's last instruction), any other address as it is. The capture
// decides a return address's function there too (profile/stack_symbols).
uint64_t location_named_address(const ProfileLocation& location);

// The frame of location `location`: its function, else its module and
// location_named_address.
FrameKey frame_key(const Profile& profile, uint32_t location);
inline FrameKey kernel_frame() { return FrameKey{FrameKey::Kind::kernel}; }

// "busy_a"; "libc.so.6+0x30000" (no symbol covers it: the module's file
// name and the static VA); "[unknown 0x7ffd5c1e2a10]" (code in no module);
// "[kernel]".
std::string frame_name(const Profile& profile, const FrameKey& key);
// The name of code no symbol covers: "libc.so.6+0x30000" in a module,
// "[unknown 0x7ffd5c1e2a10]" in none (module kNoModule or out of range).
std::string address_frame_name(const Profile& profile, uint32_t module, uint64_t address);
// The same for a module known by its path: "libc.so.6+0x30000". A function
// the module's CFI knows but no symbol names (a stripped executable's) is
// this at its start.
std::string module_address_name(const std::string& module_path, uint64_t address);
// Whether a function of the profile is such a one, named by its module and
// start rather than by a symbol: its name says nothing across builds.
bool function_has_symbol(const Profile& profile, const ProfileFunction& function);
// The module's path; "[kernel]"; "" for code in no module (JIT, vDSO).
std::string frame_module(const Profile& profile, const FrameKey& key);

// A stack's frames root first, `[kernel]` last when it was sampled in
// kernel mode: the call path as people read it.
std::vector<FrameKey> stack_path(const Profile& profile, const ProfileStack& stack);

// The module of the process's executable: the one with its build-id, else
// its path (process.exe_path), else the first; none without modules.
std::optional<uint32_t> executable_module(const Profile& profile);

// The functions `name` means: the name as nm -C prints it, the raw symbol
// name, or the name without its parameter list; or "0xVA", the functions of
// the executable (else of any module) whose code holds that static VA.
std::vector<uint32_t> functions_named(const Profile& profile, const std::string& name);

}  // namespace xref
