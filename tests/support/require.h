// Tests that need BPF, tracefs, lldb or gdb fail when those are missing and
// XREF_REQUIRE_BPF=1 is set (CI sets it); elsewhere they may skip.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace xref::test {

inline bool requirements_enforced() {
  const char* value = std::getenv("XREF_REQUIRE_BPF");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace xref::test

// Use inside a TEST body.
#define XREF_REQUIRE(condition, what)                                                  \
  do {                                                                                 \
    if (!(condition)) {                                                                \
      if (::xref::test::requirements_enforced()) {                                     \
        FAIL() << "required facility missing (XREF_REQUIRE_BPF=1): " << (what);        \
      } else {                                                                         \
        GTEST_SKIP() << "facility missing, skipped (set XREF_REQUIRE_BPF=1 to fail): " \
                     << (what);                                                        \
      }                                                                                \
    }                                                                                  \
  } while (0)
