// The flame graph SVG as readers meet it: xmllint (libxml2) checks it is
// well-formed XML, and Debian's chromium opens it headless with its script
// running: the frames it holds, a zoom and a search asked for in the URL,
// and a screenshot. The expected figures come from the example profile's
// counts (profile_example.h), not from the writer.
#include <gtest/gtest.h>

#include <regex>

#include "chromium_page.h"
#include "profile_example.h"
#include "render/profile_formats.h"
#include "require.h"

namespace xref::render {
namespace {

constexpr double kChartWidth = 1180;  // the default 1200 px less two margins of 10

struct Frame {
  std::string id, classes, name, rect;
};

// The frames of a document (as written, or as chromium's DOM holds it),
// by name; the example's names are unique but for leaf_a (first kept).
std::map<std::string, Frame> frames(const std::string& document) {
  std::map<std::string, Frame> found;
  static const std::regex frame(R"re(<g class="([^"]*)" id="(n[0-9]+)"[^>]* data-n="([^"]*)"[^>]*>[^]*?(<rect [^>]*>))re");
  for (auto it = std::sregex_iterator(document.begin(), document.end(), frame); it != std::sregex_iterator(); ++it) {
    found.emplace((*it)[3].str(), Frame{(*it)[2].str(), (*it)[1].str(), (*it)[3].str(), (*it)[4].str()});
  }
  return found;
}

size_t frame_count(const std::string& document) {
  static const std::regex frame(R"re(<g class="n[ "])re");
  return static_cast<size_t>(std::distance(std::sregex_iterator(document.begin(), document.end(), frame),
                                           std::sregex_iterator()));
}

double width_of(const Frame& frame) {
  std::smatch match;
  static const std::regex width(R"re(width="([0-9.]+)")re");
  if (!std::regex_search(frame.rect, match, width)) return -1;
  return std::stod(match[1].str());
}

std::string text_with_id(const std::string& document, const std::string& id) {
  std::smatch match;
  if (document.find("<text id=\"" + id + "\"") == std::string::npos) return "(no such text)";
  const std::regex text("<text id=\"" + id + "\"[^>]*>([^<]*)</text>");
  return std::regex_search(document, match, text) ? match[1].str() : "";  // chromium writes an empty one as <text/>
}

std::string example_svg(const FlameGraphOptions& options = {}) {
  auto svg = profile_svg(test::example_profile(), "app (pid 4242)", options);
  EXPECT_TRUE(svg) << svg.error().message;
  return svg ? *svg : "";
}

// Nodes of the example: all; main; worker; leaf_a; leaf_b; memcpy; [kernel];
// push_back; odd;name; libc.so.6+0x30000; [incomplete: no_cfi]; its leaf_a.
constexpr size_t kExampleFrames = 12;

TEST(ProfileSvg, IsWellFormedXmlWithOneFramePerNodeAndTheCapturesFacts) {
  const test::ScratchDirectory scratch;
  const std::string svg = example_svg();
  const std::string file = scratch.write("flame.svg", svg);
  EXPECT_NO_THROW(test::command_output("xmllint --noout " + file));
  EXPECT_EQ(frame_count(svg), kExampleFrames);
  EXPECT_EQ(text_with_id(svg, "title"), "app (pid 4242)");
  EXPECT_EQ(text_with_id(svg, "subtitle"),
            "cpu-clock at 99 Hz (10.10 ms per sample), callers dwarf, 1018 samples, 2 threads, 10.00 s");
  const auto by_name = frames(svg);
  ASSERT_TRUE(by_name.count("odd;name"));
  EXPECT_NE(svg.find("<title>std::vector&lt;int, std::allocator&lt;int&gt; &gt;::push_back(int const&amp;)&#10;"
                     "module: app&#10;3 samples, 0.29 % of all</title>"),
            std::string::npos);
  // Widths proportional to samples: worker holds 600 + 350 + 30 + 3 of 1018.
  ASSERT_TRUE(by_name.count("worker"));
  EXPECT_NEAR(width_of(by_name.at("worker")), 983 * kChartWidth / 1018, 0.01);
  EXPECT_NEAR(width_of(by_name.at("all")), kChartWidth, 0.01);
  EXPECT_NE(by_name.at("[incomplete: no_cfi]").classes.find("incomplete"), std::string::npos);
  EXPECT_NE(text_with_id(svg, "note").find("incomplete stacks: 20 samples (1.96 %)"), std::string::npos);
}

TEST(ProfileSvg, FramesNarrowerThanTheMinimumAreLeftOutAndCounted) {
  FlameGraphOptions options;
  options.min_frame_width = 4;  // push_back is 3 * 1180 / 1018 = 3.48 px, libc's address 5.80 px
  const std::string svg = example_svg(options);
  EXPECT_EQ(frame_count(svg), kExampleFrames - 1);
  EXPECT_EQ(frames(svg).count("std::vector<int, std::allocator<int> >::push_back(int const&)"), 0u);
  EXPECT_EQ(frames(svg).count("libc.so.6+0x30000"), 1u);
  EXPECT_NE(text_with_id(svg, "note").find("11 frames drawn; 1 frames narrower than 4.00 px left out (3 samples"),
            std::string::npos)
      << text_with_id(svg, "note");
}

// 5000 leaves of one sample each beside one of 10000: each is
// 1180 / 15000 = 0.08 px, under the default 0.25 px, so the picture holds
// main and big only, however many leaves there are.
TEST(ProfileSvg, ManyNarrowFramesDoNotGrowThePicture) {
  Profile profile;
  profile.capture.event = "cpu-clock";
  profile.functions.push_back({kNoModule, "main", "main", 0x1000, 16});
  profile.functions.push_back({kNoModule, "big", "big", 0x2000, 16});
  profile.locations.push_back({kNoModule, 0x1008, true, 0});
  profile.locations.push_back({kNoModule, 0x2008, false, 1});
  profile.stacks.push_back({{1, 0}, StackEnd::complete, false});
  profile.samples.push_back({0, 1, 10000});
  for (uint32_t i = 0; i < 5000; ++i) {
    profile.functions.push_back({kNoModule, "leaf_" + std::to_string(i), "", 0x10000 + 16ull * i, 16});
    profile.locations.push_back({kNoModule, 0x10000 + 16ull * i, false, i + 2});
    profile.stacks.push_back({{i + 2, 0}, StackEnd::complete, false});
    profile.samples.push_back({i + 1, 1, 1});
  }
  const auto svg = profile_svg(profile, "many");
  ASSERT_TRUE(svg) << svg.error().message;
  EXPECT_EQ(frame_count(*svg), 3u);  // all, main, big
  EXPECT_LT(svg->size(), 20000u);
  EXPECT_NE(text_with_id(*svg, "note").find("3 frames drawn; 5000 frames narrower than 0.25 px left out (5000 samples"),
            std::string::npos)
      << text_with_id(*svg, "note");
}

TEST(ProfileSvg, NamesThatAreNotXmlStillMakeAWellFormedDocument) {
  Profile profile = test::example_profile();
  profile.functions[5].name = std::string("bad\x01<]]>\xff\xc0\x80name\xe2\x82", 20);
  auto svg = profile_svg(profile, "title with <markup> & \"quotes\"");
  ASSERT_TRUE(svg);
  const test::ScratchDirectory scratch;
  EXPECT_NO_THROW(test::command_output("xmllint --noout " + scratch.write("odd.svg", *svg)));
}

TEST(ProfileSvg, ChromiumRunsTheScriptOverEveryFrame) {
  XREF_REQUIRE(test::chromium_present(), "chromium (Debian package chromium)");
  const test::ScratchDirectory scratch;
  const std::string file = scratch.write("flame.svg", example_svg());
  const std::string dom = test::chromium_dom(scratch, file, "");
  EXPECT_EQ(frame_count(dom), kExampleFrames);
  // The script ran: the reset link stays hidden, nothing is zoomed or matched.
  EXPECT_EQ(dom.find("data-zoomed=\""), std::string::npos);
  EXPECT_EQ(text_with_id(dom, "matched"), "");
}

TEST(ProfileSvg, ChromiumZoomsIntoAFrame) {
  XREF_REQUIRE(test::chromium_present(), "chromium (Debian package chromium)");
  const test::ScratchDirectory scratch;
  const std::string svg = example_svg();
  const std::string file = scratch.write("flame.svg", svg);
  const std::string worker = frames(svg).at("worker").id;
  const std::string dom = test::chromium_dom(scratch, file, "zoom=" + worker);
  const auto zoomed = frames(dom);
  ASSERT_TRUE(zoomed.count("worker")) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-zoomed=\"" + worker + "\""), std::string::npos);
  // worker fills the width; its callees scaled by its 983 samples; main above
  // it dimmed at full width; the branch beside it hidden.
  EXPECT_NEAR(width_of(zoomed.at("worker")), kChartWidth, 0.01);
  EXPECT_NEAR(width_of(zoomed.at("leaf_b")), 350 * kChartWidth / 983, 0.01);
  EXPECT_NEAR(width_of(zoomed.at("[kernel]")), 30 * kChartWidth / 983, 0.01);
  EXPECT_NEAR(width_of(zoomed.at("main")), kChartWidth, 0.01);
  EXPECT_NE(zoomed.at("main").classes.find("above"), std::string::npos);
  EXPECT_NE(zoomed.at("odd;name").classes.find("hide"), std::string::npos);
  EXPECT_NE(zoomed.at("[incomplete: no_cfi]").classes.find("hide"), std::string::npos);
  EXPECT_EQ(zoomed.at("worker").classes, "n");
  EXPECT_NE(dom.find("<text id=\"reset\" class=\"button\""), std::string::npos);
}

TEST(ProfileSvg, ChromiumSearchesAndCountsEachSampleOnce) {
  XREF_REQUIRE(test::chromium_present(), "chromium (Debian package chromium)");
  const test::ScratchDirectory scratch;
  const std::string file = scratch.write("flame.svg", example_svg());
  // leaf_a under worker (600) and under the incomplete marker (20), leaf_b (350).
  const std::string leaves = test::chromium_dom(scratch, file, "search=leaf_");
  EXPECT_EQ(text_with_id(leaves, "matched"), "matched: 95.28 % (970 of 1018 samples, 3 frames)");
  EXPECT_NE(frames(leaves).at("leaf_b").classes.find("match"), std::string::npos);
  EXPECT_EQ(frames(leaves).at("memcpy").classes.find("match"), std::string::npos);
  // main (600 + 350 + 30 + 3 + 10 + 5) holds worker (983), which holds
  // leaf_b (350) in its middle: the union is main's 998, not 2331.
  const std::string nested = test::chromium_dom(scratch, file, "search=%5Emain%24%7Cworker%7Cleaf_b");
  EXPECT_EQ(text_with_id(nested, "matched"), "matched: 98.04 % (998 of 1018 samples, 3 frames)");
}

TEST(ProfileSvg, ChromiumDrawsIt) {
  XREF_REQUIRE(test::chromium_present(), "chromium (Debian package chromium)");
  const test::ScratchDirectory scratch;
  const std::string file = scratch.write("flame.svg", example_svg());
  const test::PngFacts png = test::png_facts(test::chromium_screenshot(scratch, file, 1200, 400));
  EXPECT_EQ(png.width, 1200u);
  EXPECT_EQ(png.height, 400u);
  EXPECT_GT(png.distinct_bytes, 64u);
}

}  // namespace
}  // namespace xref::render
