#include "address_space.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "command_output.h"
#include "live_space.h"
#include "target_process.h"

namespace xref {
namespace {

using test::fixture_path;

// Static VAs from nm on the unstripped build (stripping keeps the layout).
std::map<std::string, uint64_t> nm_addresses(const std::string& path) {
  std::map<std::string, uint64_t> addresses;
  for (const auto& line : test::command_lines("nm --defined-only " + path)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) addresses[name] = std::stoull(address, nullptr, 16);
  }
  return addresses;
}

class LiveAddressMath : public ::testing::TestWithParam<std::string> {};

// Every live address the process reports about itself must translate to
// nm's static VA, and back, through the mapping that owns it.
TEST_P(LiveAddressMath, LiveToStaticMatchesNmAndRoundTrips) {
  const std::string variant = GetParam();
  const bool stripped = variant.find("stripped") != std::string::npos;
  const std::string unstripped = stripped ? variant.substr(0, variant.size() - 9) : variant;
  const auto nm = nm_addresses(fixture_path(unstripped));

  test::TargetProcess target({fixture_path(variant)});
  auto space = test::live_address_space(target.pid());
  ASSERT_TRUE(space) << space.error().message;
  const Module* main = space->main_module();
  ASSERT_NE(main, nullptr);
  auto bias = space->load_bias(*main);
  ASSERT_TRUE(bias.has_value());
  auto image = space->image(*main);
  ASSERT_TRUE(image);
  EXPECT_EQ((*image)->is_pie(), variant.find("nopie") == std::string::npos);
  if (!(*image)->is_pie()) {
    EXPECT_EQ(*bias, 0u);
  }

  for (const std::string name : {"idle_alpha", "idle_beta", "idle_gamma"}) {
    const uint64_t live = target.value("func", name);
    const LiveAddress resolved = space->resolve_live(live);
    EXPECT_EQ(resolved.kind, AddressKind::file_backed) << name;
    ASSERT_FALSE(resolved.candidates.empty()) << name;
    const StaticCandidate& best = resolved.candidates.front();
    EXPECT_EQ(best.module, main);
    EXPECT_EQ(best.static_va, nm.at(name)) << name;
    EXPECT_TRUE(best.file_backed);
    EXPECT_TRUE(best.permissions_agree);
    EXPECT_EQ(live - best.static_va, *bias) << name;
    auto back = space->live_from_static(*main, nm.at(name));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, live);
    if (!stripped) {
      const FunctionSymbol* function = (*image)->function_containing(best.static_va);
      ASSERT_NE(function, nullptr);
      EXPECT_EQ(function->name, name);
    }
  }

  const LiveAddress data = space->resolve_live(target.value("object", "idle_data_word"));
  EXPECT_EQ(data.kind, AddressKind::file_backed);
  ASSERT_FALSE(data.candidates.empty());
  EXPECT_EQ(data.candidates.front().static_va, nm.at("idle_data_word"));

  // .bss is zero-filled memory past the file extent: attributed to the
  // module, but never called file-backed.
  const LiveAddress bss = space->resolve_live(target.value("object", "idle_bss_words"));
  EXPECT_EQ(bss.kind, AddressKind::zero_fill);
  ASSERT_FALSE(bss.candidates.empty());
  EXPECT_FALSE(bss.candidates.front().file_backed);
  EXPECT_EQ(bss.candidates.front().static_va, nm.at("idle_bss_words") + 256 * 8);
  EXPECT_FALSE(space->live_from_static(*main, nm.at("idle_bss_words")));

  EXPECT_EQ(space->resolve_live(0x1000).kind, AddressKind::unmapped);
}

INSTANTIATE_TEST_SUITE_P(Variants, LiveAddressMath,
                         ::testing::Values("idle_pie", "idle_nopie", "idle_pie_stripped", "idle_nopie_stripped"));

TEST(AddressSpace, SharedLibrariesAreModulesWithTheirOwnBias) {
  test::TargetProcess target({fixture_path("idle_pie")});
  auto space = test::live_address_space(target.pid());
  ASSERT_TRUE(space);
  const auto getpid_in_libc = test::module_function(*space, "libc.so.6", "getpid");
  const Module* libc = getpid_in_libc.module;
  ASSERT_NE(libc, nullptr);
  EXPECT_FALSE(libc->main_executable);
  ASSERT_NE(getpid_in_libc.function, nullptr);
  const uint64_t start = getpid_in_libc.function->start;
  auto live = space->live_from_static(*libc, start);
  ASSERT_TRUE(live);
  const LiveAddress back = space->resolve_live(*live);
  ASSERT_FALSE(back.candidates.empty());
  EXPECT_EQ(back.candidates.front().module, libc);
  EXPECT_EQ(back.candidates.front().static_va, start);
}

}  // namespace
}  // namespace xref
