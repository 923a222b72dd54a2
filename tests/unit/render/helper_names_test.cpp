// The helper's own names against ground truth from outside xref: `nm` for
// the function and offset of a static VA, and the sample service's own
// report of where its functions live in the process.
#include "render/helper_names.h"

#include <gtest/gtest.h>

#include <sstream>

#include "command_output.h"
#include "live_space.h"
#include "target_process.h"

namespace xref::render {
namespace {

// nm's text symbols of the sample service: name -> static VA.
std::map<std::string, uint64_t> nm_functions(const std::string& path) {
  std::map<std::string, uint64_t> functions;
  for (const std::string& line : test::command_lines("nm --defined-only " + path)) {
    std::istringstream fields(line);
    std::string va, type, name;
    if (!(fields >> va >> type >> name) || (type != "T" && type != "t")) continue;
    functions.emplace(name, std::stoull(va, nullptr, 16));
  }
  return functions;
}

TEST(HelperNames, StaticAddressesOfTheExecutableAreNamedAsNmNamesThem) {
  auto image = ElfImage::open(XREF_SAMPLE_SERVICE);
  ASSERT_TRUE(image) << image.error().message;
  HelperNames names(std::make_shared<const ElfImage>(std::move(*image)));
  const auto functions = nm_functions(XREF_SAMPLE_SERVICE);
  for (const char* name : {"handle_request", "validate", "price_order", "apply_fee", "settle", "worker_main"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(functions.count(name));
    const uint64_t start = functions.at(name);
    const auto at_start = names.place({"", start, std::nullopt});
    ASSERT_TRUE(at_start);
    EXPECT_EQ(at_start->function, name);
    EXPECT_EQ(at_start->offset, 0u);
    const auto inside = names.place({"", start + 4, std::nullopt});
    ASSERT_TRUE(inside);
    EXPECT_EQ(inside->function, name);
    EXPECT_EQ(inside->offset, 4u);
  }
  // A module it was not given is not named (the renderer falls back to the JSON).
  EXPECT_FALSE(names.place({"libc.so.6", 0x1000, std::nullopt}));
  // Nor is an address no function holds.
  EXPECT_FALSE(names.place({"", 0x10, std::nullopt}));
}

TEST(HelperNames, LiveAddressesAreNamedThroughTheProcessMaps) {
  test::TargetProcess process({XREF_SAMPLE_SERVICE, "--threads", "1", "--interval-us", "100000"});
  auto space = test::live_address_space(process.pid());
  ASSERT_TRUE(space) << space.error().message;
  HelperNames names(*space);
  const auto functions = nm_functions(XREF_SAMPLE_SERVICE);
  for (const char* name : {"handle_request", "apply_fee"}) {
    SCOPED_TRACE(name);
    const uint64_t live = process.value("func", name);  // the process's own &handle_request
    const auto place = names.place({"", std::nullopt, live + 9});
    ASSERT_TRUE(place);
    EXPECT_EQ(place->function, name);
    EXPECT_EQ(place->offset, 9u);
    // The same address by static VA names the same place.
    const auto by_static = names.place({"", functions.at(name) + 9, std::nullopt});
    ASSERT_TRUE(by_static);
    EXPECT_EQ(by_static->function, name);
    EXPECT_EQ(by_static->offset, 9u);
  }
}

}  // namespace
}  // namespace xref::render
