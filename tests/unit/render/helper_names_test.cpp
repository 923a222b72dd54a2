// The helper's own names against ground truth from outside xref: `nm` for
// the function and offset of a static VA, the sample service's own report
// of where its functions live in the process, and addr2line and
// eu-addr2line for the file and line of every call in it, built by gcc and
// by clang (-O2 -g, PIE), as users build.
#include "render/helper_names.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include "command_output.h"
#include "live_space.h"
#include "objdump_listing.h"
#include "render/place_text.h"
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

// "sample_service.c:209" as a peer prints it for `va` (base name), "" for "??:0".
std::string peer_line(const std::string& tool, const std::string& path, uint64_t va) {
  std::ostringstream command;
  command << tool << " -e '" << path << "' 0x" << std::hex << va;
  std::string text = test::command_output(command.str());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (const size_t discriminator = text.find(" (discriminator"); discriminator != std::string::npos) {
    text.resize(discriminator);
  }
  if (text.rfind("??", 0) == 0 || text.ends_with(":0") || text.ends_with(":?")) return "";
  // eu-addr2line may add ":COLUMN".
  const size_t first = text.find(':');
  const size_t second = first == std::string::npos ? std::string::npos : text.find(':', first + 1);
  if (second != std::string::npos) text.resize(second);
  const size_t slash = text.rfind('/', first);
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

class HelperNamesBuild : public ::testing::TestWithParam<std::string> {};

TEST_P(HelperNamesBuild, CallsInTheLiveProcessAreNamedWithTheirLineAsAddr2lineSays) {
  const std::string compiler = GetParam();
  ASSERT_TRUE(test::try_command_lines("command -v " + compiler)) << "no " << compiler;
  ASSERT_TRUE(test::try_command_lines("command -v eu-addr2line")) << "install the Debian package elfutils";
  std::string dir = ::testing::TempDir() + "xref_helper_names_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/sample_service_" + compiler;
  test::command_output(compiler + " -O2 -g -fPIE -pie -fno-omit-frame-pointer -pthread -o '" + path + "' '" +
                       std::string(XREF_SOURCE_DIR) + "/tests/targets/sample_service.c' 2>&1");
  {
    test::TargetProcess process({path, "--threads", "1", "--interval-us", "100000"});
    auto space = test::live_address_space(process.pid());
    ASSERT_TRUE(space) << space.error().message;
    HelperNames names(*space);
    const test::ObjdumpListing listing(path);
    const auto functions = nm_functions(path);
    size_t calls = 0, with_line = 0;
    for (const char* function : {"handle_request", "price_order", "settle"}) {
      const uint64_t start = functions.at(function), live_start = process.value("func", function);
      for (const test::ObjdumpInstruction& instruction : listing.in_range(start, start + 0x1000)) {
        if (!instruction.is_call()) continue;
        const auto holder = names.place({"", instruction.address, std::nullopt});
        if (!holder || holder->function != function) continue;
        ++calls;
        const uint64_t offset = instruction.address - start;
        SCOPED_TRACE(::testing::Message() << function << "+0x" << std::hex << offset);
        const auto place = names.place({"", std::nullopt, live_start + offset});
        ASSERT_TRUE(place);
        EXPECT_EQ(place->function, function);
        EXPECT_EQ(place->offset, offset);
        const std::string binutils = peer_line("addr2line", path, instruction.address);
        const std::string elfutils = peer_line("eu-addr2line", path, instruction.address);
        const std::string ours = line_text(place);
        EXPECT_EQ(ours, binutils.empty() ? "" : " at " + binutils);
        // eu-addr2line needs .debug_aranges, which clang does not emit.
        if (!elfutils.empty()) {
          EXPECT_EQ(ours, " at " + elfutils);
        }
        if (!ours.empty()) ++with_line;
      }
    }
    EXPECT_GE(calls, 6u);
    // clang gives some calls line 0 (addr2line says ??:0 there too, checked above).
    EXPECT_GT(2 * with_line, calls) << "most calls of a -g build have a line";
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Compilers, HelperNamesBuild, ::testing::Values("gcc", "clang"));

}  // namespace
}  // namespace xref::render
