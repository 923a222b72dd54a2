// pprof read back by a real reader: Debian's `go tool pprof` (golang-go)
// opens the gzipped profile.proto the helper writes for a profile over a
// real binary of the project (names_target, C++: mangled and demangled
// names) and the system's libc. Ground truth from outside xref: nm for the
// functions and their addresses, readelf for the build-ids and the
// executable LOAD segments; the counts from the profile built here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "command_output.h"
#include "render/profile_formats.h"
#include "require.h"
#include "scratch_directory.h"

namespace xref::render {
namespace {

bool go_present() { return access("/usr/bin/go", X_OK) == 0; }

std::string build_id(const std::string& path) {
  for (const std::string& line : test::command_lines("readelf -n " + path)) {
    const size_t at = line.find("Build ID: ");
    if (at != std::string::npos) return line.substr(at + 10);
  }
  return "";
}

// The executable LOAD segment as it maps at `bias`: page-aligned, as the
// kernel maps it and /proc/PID/maps shows it.
ProfileMapping executable_mapping(const std::string& path, uint64_t bias) {
  for (const std::string& line : test::command_lines("readelf -lW " + path)) {
    std::istringstream fields(line);
    std::string type, offset, vaddr, paddr, filesz, memsz, flags;
    if (!(fields >> type >> offset >> vaddr >> paddr >> filesz >> memsz >> flags) || type != "LOAD") continue;
    std::string more;
    while (fields >> more) flags += more;
    if (flags.find('E') == std::string::npos) continue;
    const uint64_t start = std::stoull(vaddr, nullptr, 16) & ~0xfffull;
    const uint64_t end = (std::stoull(vaddr, nullptr, 16) + std::stoull(memsz, nullptr, 16) + 0xfff) & ~0xfffull;
    return {start + bias, end + bias, std::stoull(offset, nullptr, 16) & ~0xfffull};
  }
  return {};
}

// nm's defined code symbols (T, t, weak W, IFUNC i): raw name -> (demangled name, static VA).
std::map<std::string, std::pair<std::string, uint64_t>> nm_text(const std::string& path, const std::string& flags) {
  const auto raw = test::command_lines("nm --defined-only " + flags + " " + path);
  const auto demangled = test::command_lines("nm --defined-only -C " + flags + " " + path);
  std::map<std::string, std::pair<std::string, uint64_t>> symbols;
  for (size_t i = 0; i < raw.size() && i < demangled.size(); ++i) {
    if (raw[i].size() < 20 || std::string("TtWi").find(raw[i][17]) == std::string::npos) continue;
    auto name = [](const std::string& line) { return line.substr(19, line.find('@', 19) - 19); };  // no @@GLIBC_2.2.5
    symbols.emplace(name(raw[i]), std::make_pair(name(demangled[i]), std::stoull(raw[i].substr(0, 16), nullptr, 16)));
  }
  return symbols;
}

constexpr uint64_t kExeBias = 0x561234560000;
constexpr uint64_t kLibcBias = 0x7f1234500000;

struct RealProfile {
  Profile profile;
  std::string libc;
};

// main -> measure -> apply -> lam_f's lambda, main -> lam_f, main -> getpid
// in libc [kernel], and a stack whose unwinding stopped in apply.
RealProfile real_profile() {
  RealProfile real;
  Profile& profile = real.profile;
  real.libc = std::filesystem::canonical("/lib/x86_64-linux-gnu/libc.so.6").string();
  profile.process = {{"pid", 777}, {"exe_path", XREF_NAMES_TARGET}};
  profile.capture.event = "cpu-clock";
  profile.capture.frequency_hz = 99;
  profile.capture.period_ns = 10101010;
  profile.capture.duration_ns = 5'000'000'000;
  // libc first in the capture's order: the writer still puts the executable's mapping first.
  profile.modules = {
      {real.libc, build_id(real.libc), kLibcBias, {executable_mapping(real.libc, kLibcBias)}, "loaded", 0, ""},
      {XREF_NAMES_TARGET, build_id(XREF_NAMES_TARGET), kExeBias,
       {executable_mapping(XREF_NAMES_TARGET, kExeBias)}, "loaded", 0, ""},
  };
  const auto exe = nm_text(XREF_NAMES_TARGET, "");
  const auto libc = nm_text(real.libc, "-D");
  auto add_function = [&](uint32_t module, const std::map<std::string, std::pair<std::string, uint64_t>>& symbols,
                          const std::string& raw) {
    profile.functions.push_back({module, symbols.at(raw).first, raw, symbols.at(raw).second, 16});
    return static_cast<uint32_t>(profile.functions.size() - 1);
  };
  const uint32_t main_fn = add_function(1, exe, "main");
  const uint32_t measure = add_function(1, exe, "_Z7measuremP5Calls");
  const uint32_t apply = add_function(1, exe, "_Z5applyRKSt8functionIFiiEEi");
  const uint32_t lambda = add_function(1, exe, "_ZZ5lam_fiENKUliE_clEi");
  const uint32_t lam_f = add_function(1, exe, "_Z5lam_fi");
  const uint32_t getpid = add_function(0, libc, "getpid");
  auto at = [&](uint32_t function, uint64_t offset, bool return_address) {
    const ProfileFunction& f = profile.functions[function];
    profile.locations.push_back({f.module, f.start + offset, return_address, function});
    return static_cast<uint32_t>(profile.locations.size() - 1);
  };
  const uint32_t in_main = at(main_fn, 0x10, true), in_measure = at(measure, 0x8, true);
  const uint32_t in_apply = at(apply, 0x6, true), in_lambda = at(lambda, 0x3, false);
  const uint32_t lam_f_leaf = at(lam_f, 0x5, false), getpid_leaf = at(getpid, 0x4, false);
  const uint32_t apply_leaf = at(apply, 0x2, false);
  profile.stacks = {
      {{in_lambda, in_apply, in_measure, in_main}, StackEnd::complete, false},
      {{lam_f_leaf, in_main}, StackEnd::complete, false},
      {{getpid_leaf, in_main}, StackEnd::complete, true},
      {{apply_leaf}, StackEnd::table_pending, false},
  };
  profile.samples = {{0, 11, 400}, {0, 12, 250}, {1, 11, 120}, {2, 12, 60}, {3, 11, 7}};
  profile.threads = {{11, "names_target", 527, 0, false, false}, {12, "worker", 310, 0, true, false}};
  return real;
}

std::string pprof_output(const test::ScratchDirectory& scratch, const std::string& file, const std::string& flags) {
  return test::command_output("HOME=" + scratch.path() + " GOCACHE=" + scratch.path() +
                              "/gocache go tool pprof " + flags + " " + file + " 2>&1");
}

TEST(ProfilePprof, GoToolPprofReadsTheMappingsLocationsAndSamples) {
  XREF_REQUIRE(go_present(), "go tool pprof (Debian package golang-go)");
  const RealProfile real = real_profile();
  const Profile& profile = real.profile;
  const auto bytes = profile_pprof(profile);
  ASSERT_TRUE(bytes) << bytes.error().message;
  ASSERT_GE(bytes->size(), 2u);
  EXPECT_EQ(bytes->substr(0, 2), "\x1f\x8b");  // gzip
  const test::ScratchDirectory scratch;
  const std::string file = scratch.write("profile.pb.gz", *bytes);
  const std::string raw = pprof_output(scratch, file, "-raw");

  // Mappings: the executable first, with readelf's build-ids.
  const ProfileMapping& exe = profile.modules[1].mappings[0];
  const ProfileMapping& libc = profile.modules[0].mappings[0];
  std::ostringstream mappings;
  mappings << "Mappings\n1: 0x" << std::hex << exe.start << "/0x" << exe.end << "/0x" << exe.file_offset << " "
           << XREF_NAMES_TARGET << " " << build_id(XREF_NAMES_TARGET) << " [FN]\n2: 0x" << libc.start << "/0x"
           << libc.end << "/0x" << libc.file_offset << " " << real.libc << " " << build_id(real.libc) << " [FN]\n";
  EXPECT_NE(raw.find(mappings.str()), std::string::npos) << raw;
  ASSERT_EQ(build_id(XREF_NAMES_TARGET).size(), 40u);

  // Locations: live = static VA + bias, a return address at its call
  // (- 1); names as nm -C prints them, the raw name beside a different one.
  // The reader numbers locations itself, so they are compared by content.
  std::vector<std::string> expected_locations;
  for (const ProfileLocation& location : profile.locations) {
    const ProfileFunction& function = profile.functions[*location.function];
    std::ostringstream line;
    line << "0x" << std::hex
         << location.address + profile.modules[location.module].load_bias - (location.return_address ? 1 : 0)
         << " M=" << (location.module == 1 ? 1 : 2) << " " << function.name << " :0 s=0";
    if (function.raw_name != function.name) line << "(" << function.raw_name << ")";
    expected_locations.push_back(line.str());
  }
  const std::string kernel = "0x0 [kernel] :0 s=0", marker = "0x0 [incomplete: table_pending] :0 s=0";
  std::map<std::string, std::string> read_locations;  // id -> what the reader printed
  static const std::regex location_row(R"re(^\s+([0-9]+): (0x.*)$)re");
  const size_t locations_at = raw.find("\nLocations\n"), mappings_at = raw.find("\nMappings\n");
  ASSERT_NE(locations_at, std::string::npos) << raw;
  std::istringstream location_lines(raw.substr(locations_at, mappings_at - locations_at));
  for (std::string line; std::getline(location_lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, location_row)) read_locations[match[1].str()] = match[2].str();
  }
  std::vector<std::string> all_expected = expected_locations;
  all_expected.push_back(kernel);
  all_expected.push_back(marker);
  std::vector<std::string> all_read;
  for (const auto& [id, text] : read_locations) all_read.push_back(text);
  std::sort(all_expected.begin(), all_expected.end());
  std::sort(all_read.begin(), all_read.end());
  EXPECT_EQ(all_read, all_expected) << raw;
  EXPECT_NE(raw.find("lam_f(int)::{lambda(int)#1}::operator()(int) const"), std::string::npos);

  // Samples: one per (stack, thread), the count and the CPU time, leaf
  // first, [kernel] above the leaf and the marker below the last frame,
  // the thread labelled.
  std::vector<std::string> expected_samples;
  for (const ProfileSample& sample : profile.samples) {
    const ProfileStack& stack = profile.stacks[sample.stack];
    std::string text = std::to_string(sample.count) + " " + std::to_string(sample.count * 10101010) + ":";
    if (stack.in_kernel) text += " " + kernel + ";";
    for (uint32_t location : stack.locations) text += " " + expected_locations[location] + ";";
    if (!stack_is_whole(stack.end)) text += " " + marker + ";";
    text += " thread:[" + std::to_string(sample.tid) + "]";
    expected_samples.push_back(text);
  }
  std::vector<std::string> read_samples;
  static const std::regex sample_row(R"re(^\s+([0-9]+)\s+([0-9]+): ([0-9 ]+)$)re");
  static const std::regex thread_row(R"re(^\s+thread:\[([0-9]+)\]$)re");
  std::istringstream sample_lines(raw.substr(0, locations_at));
  for (std::string line; std::getline(sample_lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, sample_row)) {
      std::string text = match[1].str() + " " + match[2].str() + ":";
      std::istringstream ids(match[3].str());
      for (std::string id; ids >> id;) text += " " + read_locations[id] + ";";
      read_samples.push_back(text);
    } else if (std::regex_match(line, match, thread_row) && !read_samples.empty()) {
      read_samples.back() += " thread:[" + match[1].str() + "]";
    }
  }
  EXPECT_EQ(read_samples, expected_samples) << raw;
  EXPECT_NE(raw.find("thread_name:[names_target]"), std::string::npos);
  EXPECT_NE(raw.find("PeriodType: cpu-clock nanoseconds\nPeriod: 10101010\n"), std::string::npos);
}

// -top by sample count: each function's own samples (flat) and those under
// it (cum), as the profile's stacks give them.
TEST(ProfilePprof, GoToolPprofTopAndTagsAgreeWithTheProfile) {
  XREF_REQUIRE(go_present(), "go tool pprof (Debian package golang-go)");
  const RealProfile real = real_profile();
  const auto bytes = profile_pprof(real.profile);
  ASSERT_TRUE(bytes);
  const test::ScratchDirectory scratch;
  const std::string file = scratch.write("profile.pb.gz", *bytes);
  const std::string top =
      pprof_output(scratch, file, "-top -sample_index=samples -nodecount=1000 -nodefraction=0 -edgefraction=0");
  std::map<std::string, std::pair<uint64_t, uint64_t>> read;  // name -> flat, cum
  static const std::regex row(R"re(^\s*([0-9]+)\s+[0-9.]+%\s+[0-9.]+%\s+([0-9]+)\s+[0-9.]+%\s+(.+)$)re");
  std::istringstream top_lines(top);
  for (std::string line; std::getline(top_lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) read[match[3].str()] = {std::stoull(match[1]), std::stoull(match[2])};
  }
  const std::map<std::string, std::pair<uint64_t, uint64_t>> expected{
      {"lam_f(int)::{lambda(int)#1}::operator()(int) const", {650, 650}},
      {"apply(std::function<int (int)> const&, int)", {7, 657}},
      {"measure(unsigned long, Calls*)", {0, 650}},
      {"main", {0, 830}},
      {"lam_f(int)", {120, 120}},
      {"getpid", {0, 60}},
      {"[kernel]", {60, 60}},
      {"[incomplete: table_pending]", {0, 7}},
  };
  EXPECT_EQ(read, expected) << top;

  const std::string tags = pprof_output(scratch, file, "-tags -sample_index=samples");
  // 400 + 120 + 7 and 250 + 60 of 837.
  EXPECT_NE(tags.find("527.0 (62.96%): 11"), std::string::npos) << tags;
  EXPECT_NE(tags.find("310.0 (37.04%): 12"), std::string::npos) << tags;
}

}  // namespace
}  // namespace xref::render
