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
  std::optional<uint64_t> value;  // absent when the read failed
  int error = 0;                  // -errno of the failed read
};

// The values a BPF record carries for `items` (in order): `count` of them,
// bit i of `failed` set when item i's read failed, with its -errno in
// errors[i]; `values` and `errors` hold XREF_FETCH_MAX_ITEMS each.
std::vector<FetchedValue> fetched_values(const std::vector<FetchItem>& items, size_t count, uint16_t failed,
                                         const __u64* values, const __s16* errors);

// "unreadable: EFAULT (-14)": how a failed read is named in JSON.
std::string fetch_error_text(int error);

// {"name", "type", "value" (hex), "signed_value" for signed types} or, for a
// failed read, "value": null and "error": "unreadable: EFAULT (-14)".
nlohmann::json fetched_json(const FetchedValue& value);

}  // namespace xref
