// What a report calls a frame: the function a location falls in, or, for a
// location no symbol covers, its address; `[kernel]` above a stack sampled
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

// The frame of location `location`.
FrameKey frame_key(const Profile& profile, uint32_t location);
inline FrameKey kernel_frame() { return FrameKey{FrameKey::Kind::kernel}; }

// "busy_a"; "libc.so.6+0x30000" (no symbol covers it: the module's file
// name and the static VA); "[unknown 0x7ffd5c1e2a10]" (code in no module);
// "[kernel]".
std::string frame_name(const Profile& profile, const FrameKey& key);
// The name of code no symbol covers: "libc.so.6+0x30000" in a module,
// "[unknown 0x7ffd5c1e2a10]" in none (module kNoModule or out of range).
std::string address_frame_name(const Profile& profile, uint32_t module, uint64_t address);
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
