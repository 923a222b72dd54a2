// One value a fetch read when its probe fired (fetch_spec.h names and types
// it), or the error of the read that failed, and its JSON: the same shape
// for every command that fetches (docs/json.md, "fetches").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bpf_abi.h"
#include "fetch_spec.h"

namespace xref {

struct FetchedValue {
  std::string name;
  FetchType type;
  std::optional<uint64_t> value;  // absent when the read failed; a string's: its length | XREF_STRING_CUT
  int error = 0;                  // -errno of the failed read
  std::string text;               // a :string fetch: the bytes read, at most its bound

  bool truncated() const { return value && (*value & XREF_STRING_CUT) != 0; }
};

// The bytes of a string slot up to its first NUL, at most `bound` of them.
std::string string_slot_text(const __u8* slot, size_t bound);

// The values a BPF record carries for `items` (in order): `count` of them,
// bit i of `failed` set when item i's read failed, with its -errno in
// errors[i]; `values` and `errors` hold XREF_FETCH_MAX_ITEMS each.
// `strings`, when the record carries them, holds the XREF_FETCH_MAX_STRINGS
// string slots of XREF_STRING_BUFFER_BYTES each; a string item of a record
// without them reads as "".
std::vector<FetchedValue> fetched_values(const std::vector<FetchItem>& items, size_t count, uint16_t failed,
                                         const __u64* values, const __s16* errors, const __u8* strings = nullptr);

// "unreadable: EFAULT (-14)": how a failed read is named in JSON.
std::string fetch_error_text(int error);

// {"name", "type", "value" (hex), "signed_value" for signed types} or, for a
// failed read, "value": null and "error": "unreadable: EFAULT (-14)". A
// string: "string" (its bytes; JSON output writes bytes that are not UTF-8
// as U+FFFD), "length" (bytes kept) and "truncated" (cut at its bound), and
// no "value".
nlohmann::json fetched_json(const FetchedValue& value);

// One fetch of such JSON as text: `name=0x2a`, `name=-3`, `name="set"`,
// `name="settin…" (cut at 64 bytes)`, `name=unreadable: EFAULT (-14)`. Signed
// values in decimal when `signed_decimal`, else as the JSON's hex.
std::string fetched_text(const nlohmann::json& fetch, bool signed_decimal);

// A fetched string as text: "set", or "settin…" (cut at 6 bytes) when it
// was cut at its bound (then as long as the bound).
std::string fetched_string_text(const std::string& bytes, bool truncated, size_t bound);

}  // namespace xref
