// What `xref watch` takes as an ADDR and a --follow SPEC, parsed but not
// yet resolved against the process (plan.cpp does that):
//   ADDR  = 0xLIVE | SYM | MODULE:SYM | SYM+0x10 | SYM-8, each with an optional :LEN
//   SPEC  = SLOT->+OFF:LEN | SLOT->OFF:LEN  (SLOT an ADDR of a pointer; OFF decimal or 0x, may be negative)
// LEN is the last ':'-part when it is a number; a module name has no ':'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "result.h"

namespace xref {

struct AddressSpec {
  std::string spelled;
  std::optional<uint64_t> live_address;  // 0xVA: a live address
  std::string module;                    // MODULE:SYM; empty: the executable, then every module
  std::string symbol;
  int64_t offset = 0;                    // SYM+OFF
  std::optional<uint64_t> length;        // :LEN
};

Result<AddressSpec> parse_address_spec(const std::string& text);

struct FollowSpec {
  std::string spelled;
  AddressSpec slot;      // the pointer slot (8 bytes)
  int64_t offset = 0;    // the dependent range starts at *slot + offset
  uint64_t length = 0;
};

Result<FollowSpec> parse_follow_spec(const std::string& text);

}  // namespace xref
