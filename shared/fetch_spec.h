// Fetch specs: what to read at each probe hit, written in the kernel's uprobe
// fetch-arg syntax so the same text works for tracefs uprobe_events and for
// xref's own BPF program. A spec is a comma-separated list of NAME=ARG[:TYPE]:
//   amount=%r8:u64,asset=+16(%dx):u64,v=+8(+16(%di)):s32,p=+0x30(%rcx):x64
// ARG is %REG or [+|-]OFFSET(ARG), a read of user memory at ARG+OFFSET.
// TYPE :string reads a NUL-terminated string as the kernel's uprobe events
// do: the string starts at the last dereference's address, so
// "name=+0(%di):string" is the string di points at and "+8(%si):string" a
// char array 8 bytes into *si. :string[N] bounds it at N bytes (default
// fetch_string_default_bytes, at most fetch_string_max_bytes); a longer
// string is cut there, and says so.
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
inline constexpr size_t fetch_max_strings = XREF_FETCH_MAX_STRINGS;
inline constexpr size_t fetch_string_default_bytes = XREF_STRING_DEFAULT_BYTES;
inline constexpr size_t fetch_string_max_bytes = XREF_STRING_MAX_BYTES;

// u8..u64, s8..s64, x8..x64: width, sign extension, and display in hex
// (x types are unsigned); or string[N], a string of at most N bytes.
struct FetchType {
  uint8_t width_bytes = 8;
  bool is_signed = false;
  bool hex = false;
  uint16_t string_bound = 0;  // a string's bound in bytes; 0: a number

  bool is_string() const { return string_bound != 0; }

  bool operator==(const FetchType&) const = default;
};

// "u64", "s32", "x8", "string[64]".
std::string fetch_type_name(FetchType type);

// The type as the kernel's uprobe events spell it: "string" for any bound
// (the kernel reads up to its own limit; the bound is applied when read).
std::string kernel_fetch_type_name(FetchType type);

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
// (decimal), an explicit type. "asset=+16(%dx):u64", "k=+0(%di):string[64]".
std::string to_string(const FetchItem& item);

// The items as one spec: "a=%r8:u64,b=-8(%sp):s32".
std::string to_string(std::span<const FetchItem> items);

// The fetch args of a tracefs uprobe_events line, space-separated as the
// kernel wants them: "amount=%r8:u64 asset=+16(%dx):u64". Each arg is
// to_string(item) with the kernel's type name; the kernel needs the sign
// that the spec lets users omit.
std::string tracefs_fetch_args(std::span<const FetchItem> items);

// The BPF program's form of one item (see struct xref_fetch). A string
// item reads into `string_slot` (its rank among the string items).
xref_fetch compile_fetch(const FetchItem& item, uint8_t string_slot = 0);

// compile_fetch over every item, string items numbered in order.
std::vector<xref_fetch> compile_fetches(std::span<const FetchItem> items);

// The string slot of each item (-1 for a number), in order.
std::vector<int> fetch_string_slots(std::span<const FetchItem> items);

// What a fetch of `type` yields from the raw bytes read (little-endian, in
// the low bytes of `raw`): the low width bytes, sign- or zero-extended to 64
// bits. The BPF program does the same before filtering.
uint64_t extend_fetched_value(uint64_t raw, FetchType type);

}  // namespace xref
