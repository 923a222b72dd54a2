// Fetch specs: what to read at each probe hit, written in the kernel's uprobe
// fetch-arg syntax so the same text works for tracefs uprobe_events and for
// xref's own BPF program. A spec is a comma-separated list of NAME=ARG[:TYPE]:
//   amount=%r8:u64,asset=+16(%dx):u64,v=+8(+16(%di)):s32,p=+0x30(%rcx):x64
// ARG is %REG or [+|-]OFFSET(ARG), a read of user memory at ARG+OFFSET.
#pragma once

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf_abi.h"
#include "result.h"
#include "x86_registers.h"

namespace xref {

inline constexpr size_t fetch_max_items = XREF_FETCH_MAX_ITEMS;
inline constexpr size_t fetch_max_derefs = XREF_FETCH_MAX_DEREFS;
// The kernel rejects longer argument names (MAX_ARG_NAME_LEN).
inline constexpr size_t fetch_max_name_length = 32;

// u8..u64, s8..s64, x8..x64: width, sign extension, and display in hex
// (x types are unsigned).
struct FetchType {
  uint8_t width_bytes = 8;
  bool is_signed = false;
  bool hex = false;

  bool operator==(const FetchType&) const = default;
};

// "u64", "s32", "x8".
std::string fetch_type_name(FetchType type);

struct FetchItem {
  std::string name;
  Register base = Register::ax;
  // One entry per dereference, innermost first: "+8(+16(%di))" is {16, 8},
  // i.e. read at di+16, then at (that value)+8. Empty for a plain register.
  std::vector<int32_t> deref_offsets;
  FetchType type;
  // Not in the kernel's syntax: an index register times a scale added to
  // the base before the first dereference (an indirect call's target,
  // `call qword ptr [rdx + rax*8]`); only BPF backends read it.
  std::optional<Register> index;
  uint8_t scale = 1;

  bool operator==(const FetchItem&) const = default;
};

// Parses a whole spec. Errors are invalid_argument with `column` the 1-based
// column in `spec` of the offending character. Spaces are allowed around
// items, not inside them. Names must be unique; at most fetch_max_items
// items and fetch_max_derefs nested dereferences each.
Result<std::vector<FetchItem>> parse_fetch_spec(std::string_view spec);

// Canonical spec text of one item, which parse_fetch_spec reads back to the
// same item: kernel register names, an explicit sign on every offset
// (decimal), an explicit type. "asset=+16(%dx):u64".
std::string to_string(const FetchItem& item);

// The items as one spec: "a=%r8:u64,b=-8(%sp):s32".
std::string to_string(std::span<const FetchItem> items);

// The fetch args of a tracefs uprobe_events line, space-separated as the
// kernel wants them: "amount=%r8:u64 asset=+16(%dx):u64". Each arg is
// to_string(item); the kernel needs the sign that the spec lets users omit.
std::string tracefs_fetch_args(std::span<const FetchItem> items);

// The BPF program's form of one item (see struct xref_fetch).
xref_fetch compile_fetch(const FetchItem& item);

// What a fetch of `type` yields from the raw bytes read (little-endian, in
// the low bytes of `raw`): the low width bytes, sign- or zero-extended to 64
// bits. The BPF program does the same before filtering.
uint64_t extend_fetched_value(uint64_t raw, FetchType type);

}  // namespace xref
