#include "process/symbolizer.h"

#include <gtest/gtest.h>

#include "hex.h"
#include "objdump_listing.h"
#include "live_space.h"
#include "target_process.h"

namespace xref {
namespace {

using test::fixture_path;

// Every call in the fixture's own functions, as objdump lists it: its
// return address (the next instruction) names it exactly, and an address
// that follows no call names no call site.
TEST(Symbolizer, AReturnAddressNamesTheCallObjdumpShows) {
  for (const std::string variant : {"idle_pie", "idle_nopie_stripped"}) {
    SCOPED_TRACE(variant);
    const std::string unstripped = variant.substr(0, variant.find("_stripped"));
    const test::ObjdumpListing listing(fixture_path(unstripped));
    test::TargetProcess target({fixture_path(variant)});
    auto space = test::live_address_space(target.pid());
    ASSERT_TRUE(space) << space.error().message;
    const Module* main = space->main_module();
    ASSERT_NE(main, nullptr);
    Symbolizer symbolizer(*space, main);

    const uint64_t beta = *listing.symbol("idle_beta");
    const uint64_t gamma = *listing.symbol("idle_gamma");
    size_t calls = 0;
    for (const auto& instruction : listing.in_range(beta, beta + 64)) {
      if (!instruction.is_call()) continue;
      ++calls;
      auto live_return = space->live_from_static(*main, instruction.next);
      ASSERT_TRUE(live_return);
      const CallSiteInfo site = symbolizer.call_site(*live_return);
      EXPECT_TRUE(site.known);
      EXPECT_TRUE(site.verified);
      EXPECT_EQ(site.call_site_va, instruction.address) << to_hex(instruction.address);
      EXPECT_EQ(site.caller_va, beta);
      EXPECT_EQ(site.call_site_live, *space->live_from_static(*main, instruction.address));
      EXPECT_TRUE(site.module.empty());
      if (variant == "idle_pie") {
        EXPECT_EQ(site.caller, "idle_beta");
      }
      // Asked again: the same answer (from the cache).
      EXPECT_EQ(symbolizer.call_site(*live_return).call_site_va, instruction.address);
      break;
    }
    EXPECT_EQ(calls, 1u) << "objdump shows no call in idle_beta (it calls idle_alpha)";

    // A function's first instruction follows no call of its own function.
    const CallSiteInfo not_after_call = symbolizer.call_site(*space->live_from_static(*main, gamma));
    EXPECT_TRUE(not_after_call.known);
    EXPECT_FALSE(not_after_call.verified);
    EXPECT_EQ(not_after_call.call_site_va, gamma);
    EXPECT_EQ(not_after_call.call_site_live, 0u);

    EXPECT_FALSE(symbolizer.call_site(0x1000).known);
    EXPECT_FALSE(symbolizer.code_address(0x1000));
  }
}

TEST(Symbolizer, AddressesInALibraryCarryItsName) {
  test::TargetProcess target({fixture_path("idle_pie")});
  auto space = test::live_address_space(target.pid());
  ASSERT_TRUE(space);
  const auto getpid_in_libc = test::module_function(*space, "libc.so.6", "getpid");
  ASSERT_NE(getpid_in_libc.function, nullptr);
  const Module* libc = getpid_in_libc.module;
  const uint64_t start = getpid_in_libc.function->start;
  Symbolizer symbolizer(*space, space->main_module());

  const SymbolizedAddress at_start = symbolizer.static_address(*libc, start);
  EXPECT_EQ(at_start.module, "libc.so.6");
  EXPECT_EQ(at_start.offset, 0u);
  EXPECT_EQ(at_start.name(), "libc.so.6:" + at_start.function);
  EXPECT_EQ(at_start.name_with_offset(), at_start.name());

  const SymbolizedAddress inside = symbolizer.static_address(*libc, start + 4);
  EXPECT_EQ(inside.function, at_start.function);
  EXPECT_EQ(inside.offset, 4u);
  EXPECT_EQ(inside.name_with_offset(), at_start.name() + "+0x4");

  auto live = space->live_from_static(*libc, start + 4);
  ASSERT_TRUE(live);
  const auto named = symbolizer.code_address(*live);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->static_va, start + 4);
  EXPECT_EQ(named->name_with_offset(), inside.name_with_offset());
}

}  // namespace
}  // namespace xref
