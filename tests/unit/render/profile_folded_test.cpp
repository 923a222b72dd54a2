// Folded stacks read back as FlameGraph, inferno and speedscope read them
// (the path is everything before the line's last space, frames split on
// every ';'): the same total as the profile, and each path's count equal to
// the samples of the stacks the profile says run through it, summed over
// threads, with the markers where docs/profile.md puts them.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "profile_example.h"
#include "render/profile_formats.h"

namespace xref::render {
namespace {

std::string unescape(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size()) {
      out += static_cast<char>(std::stoi(name.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += name[i];
    }
  }
  return out;
}

// path (frames, unescaped) -> count, as a reader of the text sees it.
std::map<std::vector<std::string>, uint64_t> read_folded(const std::string& text) {
  std::map<std::vector<std::string>, uint64_t> paths;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    std::vector<std::string> frames;
    std::istringstream path(line.substr(0, space));
    std::string frame;
    while (std::getline(path, frame, ';')) frames.push_back(unescape(frame));
    EXPECT_TRUE(paths.emplace(frames, std::stoull(line.substr(space + 1))).second) << "a path twice: " << line;
  }
  return paths;
}

TEST(ProfileFolded, ReadsBackToTheProfilesTotalAndPaths) {
  const Profile profile = test::example_profile();
  const auto folded = profile_folded(profile);
  ASSERT_TRUE(folded) << folded.error().message;
  const auto paths = read_folded(*folded);
  uint64_t total = 0;
  for (const auto& [path, count] : paths) total += count;
  EXPECT_EQ(total, profile.total_samples());
  EXPECT_EQ(total, 1018u);

  // The example's stacks by hand: thread splits summed, stacks 1 and 2
  // (two pcs of leaf_b) one path.
  const std::map<std::vector<std::string>, uint64_t> expected{
      {{"main", "worker", "leaf_a"}, 600},
      {{"main", "worker", "leaf_b"}, 350},
      {{"[incomplete: no_cfi]", "leaf_a"}, 20},
      {{"main", "worker", "memcpy", "[kernel]"}, 30},
      {{"main", "odd;name"}, 10},
      {{"main", "libc.so.6+0x30000"}, 5},
      {{"main", "worker", "std::vector<int, std::allocator<int> >::push_back(int const&)"}, 3},
  };
  EXPECT_EQ(paths, expected);
}

TEST(ProfileFolded, TheTextIsSortedAndEscaped) {
  const auto folded = profile_folded(test::example_profile());
  ASSERT_TRUE(folded);
  EXPECT_EQ(*folded,
            "[incomplete: no_cfi];leaf_a 20\n"
            "main;libc.so.6+0x30000 5\n"
            "main;odd%3Bname 10\n"
            "main;worker;leaf_a 600\n"
            "main;worker;leaf_b 350\n"
            "main;worker;memcpy;[kernel] 30\n"
            "main;worker;std::vector<int, std::allocator<int> >::push_back(int const&) 3\n");
}

TEST(ProfileFolded, AnUnnamedReturnAddressIsNamedByItsCallAndCodeOutsideModulesByItsLiveAddress) {
  Profile profile = test::example_profile();
  profile.locations.push_back({0, 0x30105, true, std::nullopt});          // 9: return address 0x30105
  profile.locations.push_back({kNoModule, 0x7ffd5c1e2a10, false, std::nullopt});  // 10: vdso-like
  profile.stacks = {{{10, 9}, StackEnd::complete, false}};
  profile.samples = {{0, 101, 7}};
  const auto folded = profile_folded(profile);
  ASSERT_TRUE(folded);
  EXPECT_EQ(*folded, "libc.so.6+0x30104;[unknown 0x7ffd5c1e2a10] 7\n");
}

TEST(ProfileFolded, AnIndexOutsideItsTableIsAFormatError) {
  Profile profile = test::example_profile();
  profile.stacks[1].locations.push_back(99);
  const auto folded = profile_folded(profile);
  ASSERT_FALSE(folded);
  EXPECT_EQ(folded.error().code, ErrorCode::capture_format);
  EXPECT_NE(folded.error().message.find("stacks[1].locations"), std::string::npos);
}

TEST(ProfileFolded, AnEndWithoutANameIsAFormatError) {
  Profile profile = test::example_profile();
  profile.stacks[3].end = static_cast<StackEnd>(99);
  const auto folded = profile_folded(profile);
  ASSERT_FALSE(folded);
  EXPECT_NE(folded.error().message.find("stacks[3].end"), std::string::npos);
}

}  // namespace
}  // namespace xref::render
