// SourceLines against binutils' addr2line and elfutils' eu-addr2line on the
// same files, at every instruction objdump lists: sample_service.c built by
// gcc and by clang, -O2 -g, PIE and not; then its stripped copy finding the
// lines in a separate debug file by .gnu_debuglink (each place gdb looks,
// CRC checked) and by build-id; Debian's libc with libc6-dbg; a module
// without DWARF; and damaged files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "command_output.h"
#include "objdump_listing.h"
#include "source_lines.h"

namespace xref {
namespace {

using test::command_lines;
using test::command_output;
using test::try_command_lines;

namespace fs = std::filesystem;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

std::string sample_source() { return std::string(XREF_SOURCE_DIR) + "/tests/targets/sample_service.c"; }

// A temporary directory, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    path = ::testing::TempDir() + "xref_source_lines_XXXXXX";
    if (mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp " + path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// A line as a peer tool printed it: nullopt for "??:0", "??:?", "FILE:0", "FILE:?".
std::optional<SourceLine> parse_peer_line(std::string text, bool with_column) {
  if (const size_t discriminator = text.find(" (discriminator"); discriminator != std::string::npos) {
    text.resize(discriminator);
  }
  const size_t first = text.find(':');
  if (first == std::string::npos || text.substr(0, first) == "??") return std::nullopt;
  SourceLine line;
  line.file = text.substr(0, first);
  const std::string rest = text.substr(first + 1);
  const size_t second = rest.find(':');
  const std::string number = rest.substr(0, second);
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  line.line = static_cast<uint32_t>(std::stoul(number));
  if (line.line == 0) return std::nullopt;
  if (with_column && second != std::string::npos) line.column = static_cast<uint32_t>(std::stoul(rest.substr(second + 1)));
  return line;
}

// The tool's answer for each address, one line each.
std::vector<std::optional<SourceLine>> peer_lines(const std::string& tool, const std::string& path,
                                                  const std::vector<uint64_t>& addresses, const TempDir& dir) {
  const std::string input = dir / "addresses.txt";
  {
    std::ofstream out(input);
    for (uint64_t address : addresses) out << std::hex << "0x" << address << "\n";
  }
  const auto lines = command_lines(tool + " -e '" + path + "' < '" + input + "'");
  std::vector<std::optional<SourceLine>> found;
  for (const std::string& line : lines) {
    if (found.size() < addresses.size()) found.push_back(parse_peer_line(line, tool == "eu-addr2line"));
  }
  return found;
}

std::vector<uint64_t> instruction_addresses(const std::string& path) {
  std::vector<uint64_t> addresses;
  const test::ObjdumpListing listing(path);
  for (const auto& instruction : listing.in_range(0, UINT64_MAX)) addresses.push_back(instruction.address);
  return addresses;
}

std::string describe(const std::optional<SourceLine>& line) {
  if (!line) return "none";
  return line->file + ":" + std::to_string(line->line) + ":" + std::to_string(line->column);
}

struct Build {
  std::string compiler;  // gcc or clang
  bool pie = true;
};

std::string build_name(const Build& build) { return build.compiler + (build.pie ? "_pie" : "_nopie"); }

std::string compile(const Build& build, const TempDir& dir) {
  const std::string output = dir / build_name(build);
  const std::string flags = build.pie ? "-fPIE -pie" : "-fno-pie -no-pie";
  command_output(build.compiler + " -O2 -g " + flags + " -pthread -o '" + output + "' '" + sample_source() + "' 2>&1");
  return output;
}

class SourceLinesBuild : public ::testing::TestWithParam<Build> {};

// Every instruction's line is the one addr2line prints (file and line), and
// where eu-addr2line answers (it needs .debug_aranges, which clang does not
// emit), the one it prints too, column included.
TEST_P(SourceLinesBuild, EveryInstructionAgreesWithAddr2line) {
  ASSERT_TRUE(try_command_lines("command -v " + GetParam().compiler)) << "no " << GetParam().compiler;
  ASSERT_TRUE(try_command_lines("command -v eu-addr2line")) << "install the Debian package elfutils";
  const TempDir dir;
  const std::string path = compile(GetParam(), dir);
  auto lines = SourceLines::open(path);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), path);

  const std::vector<uint64_t> addresses = instruction_addresses(path);
  ASSERT_GT(addresses.size(), 500u);
  const auto binutils = peer_lines("addr2line", path, addresses, dir);
  const auto elfutils = peer_lines("eu-addr2line", path, addresses, dir);
  ASSERT_EQ(binutils.size(), addresses.size());
  ASSERT_EQ(elfutils.size(), addresses.size());
  size_t with_line = 0, checked_with_elfutils = 0;
  for (size_t index = 0; index < addresses.size(); ++index) {
    const std::optional<SourceLine> ours = lines->at(addresses[index]);
    const auto& expected = binutils[index];
    SCOPED_TRACE(::testing::Message() << std::hex << "0x" << addresses[index] << " ours " << describe(ours)
                                      << " addr2line " << describe(expected) << " eu-addr2line "
                                      << describe(elfutils[index]));
    ASSERT_EQ(ours.has_value(), expected.has_value());
    if (!ours) continue;
    ++with_line;
    EXPECT_EQ(ours->file, expected->file);
    EXPECT_EQ(ours->line, expected->line);
    if (elfutils[index]) {
      ++checked_with_elfutils;
      EXPECT_EQ(ours->file, elfutils[index]->file);
      EXPECT_EQ(ours->line, elfutils[index]->line);
      EXPECT_EQ(ours->column, elfutils[index]->column);
    }
  }
  // Most of the code is sample_service.c's; crt code and PLT stubs have no lines.
  EXPECT_GT(with_line, addresses.size() / 2);
  if (GetParam().compiler == "gcc") {
    EXPECT_EQ(checked_with_elfutils, with_line);
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, SourceLinesBuild,
                         ::testing::Values(Build{"gcc", true}, Build{"gcc", false}, Build{"clang", true},
                                           Build{"clang", false}),
                         [](const ::testing::TestParamInfo<Build>& build) { return build_name(build.param); });

// A program built once per test, its --only-keep-debug part and a stripped
// copy, compared with the unstripped lines at every instruction.
class SplitDebug : public ::testing::Test {
 protected:
  void SetUp() override {
    full_ = compile(Build{"gcc", true}, dir_);
    auto lines = SourceLines::open(full_);
    ASSERT_TRUE(lines);
    full_lines_ = std::move(*lines);
    addresses_ = instruction_addresses(full_);
    debug_ = dir_ / "prog.debug";
    command_output("objcopy --only-keep-debug '" + full_ + "' '" + debug_ + "'");
  }

  // Strips a copy of the program into `path`, with a debuglink to debug_ when asked.
  void strip_into(const std::string& path, bool debuglink) {
    fs::create_directories(fs::path(path).parent_path());
    std::string command = "objcopy --strip-debug ";
    if (debuglink) command += "--add-gnu-debuglink='" + debug_ + "' ";
    command_output(command + "'" + full_ + "' '" + path + "'");
  }

  // The stripped module's lines are the unstripped one's at every instruction.
  void expect_same_lines(const SourceLines& lines) {
    size_t with_line = 0;
    for (uint64_t address : addresses_) {
      const auto expected = full_lines_.at(address);
      const auto ours = lines.at(address);
      SCOPED_TRACE(::testing::Message() << std::hex << "0x" << address);
      ASSERT_EQ(describe(ours), describe(expected));
      with_line += ours.has_value();
    }
    EXPECT_GT(with_line, addresses_.size() / 2);
  }

  TempDir dir_;
  std::string full_, debug_;
  SourceLines full_lines_;
  std::vector<uint64_t> addresses_;
};

TEST_F(SplitDebug, StrippedModuleWithoutDebugFileHasNoLines) {
  const std::string stripped = dir_ / "alone/prog";
  strip_into(stripped, false);
  const TempDir empty_root;
  auto lines = SourceLines::open(stripped, empty_root.path);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), "");
  for (uint64_t address : addresses_) EXPECT_FALSE(lines->at(address)) << std::hex << address;
}

// gdb's three places for a debuglink's NAME: beside the module, in its
// .debug/ directory, and under the debug root + the module's directory.
TEST_F(SplitDebug, DebuglinkFoundWhereGdbLooks) {
  const TempDir root;
  const std::string beside = dir_ / "beside/prog";
  const std::string in_dot_debug = dir_ / "dotdebug/prog";
  const std::string under_root = dir_ / "rooted/prog";
  for (const std::string& path : {beside, in_dot_debug, under_root}) strip_into(path, true);
  const std::string beside_debug = dir_ / "beside/prog.debug";
  const std::string dot_debug = dir_ / "dotdebug/.debug/prog.debug";
  const std::string root_debug = root.path + "/" + (dir_ / "rooted/prog.debug").substr(1);
  for (const std::string& path : {beside_debug, dot_debug, root_debug}) {
    fs::create_directories(fs::path(path).parent_path());
    fs::copy_file(debug_, path);
  }
  const std::vector<std::pair<std::string, std::string>> cases{
      {beside, beside_debug}, {in_dot_debug, dot_debug}, {under_root, root_debug}};
  for (const auto& [module, debug_file] : cases) {
    SCOPED_TRACE(module);
    auto lines = SourceLines::open(module, root.path);
    ASSERT_TRUE(lines) << lines.error().message;
    EXPECT_EQ(lines->debug_file(), debug_file);
    expect_same_lines(*lines);
  }
  // gdb finds the lines in the same places (-iex: its settings before it loads the module).
  for (const auto& [module, debug_file] : cases) {
    const auto gdb = command_output("gdb -nx -batch -iex 'set debug-file-directory " + root.path +
                                    "' -ex 'info line handle_request' '" + module + "' 2>&1");
    EXPECT_NE(gdb.find("of \"" + sample_source() + "\""), std::string::npos) << module << ": " << gdb;
  }
}

// A debug file whose CRC-32 is not the link's (another build, or changed
// since) is not read, as gdb refuses it.
TEST_F(SplitDebug, DebuglinkWithWrongCrcIsRefused) {
  const std::string module = dir_ / "crc/prog";
  strip_into(module, true);
  const std::string debug_file = dir_ / "crc/prog.debug";
  fs::copy_file(debug_, debug_file);
  {
    std::ofstream append(debug_file, std::ios::app | std::ios::binary);
    append.put('\0');
  }
  const TempDir root;
  auto lines = SourceLines::open(module, root.path);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), "");
  EXPECT_FALSE(lines->at(addresses_[addresses_.size() / 2]));
}

std::string build_id(const std::string& path) {
  const std::string notes = command_output("readelf -n '" + path + "'");
  const size_t at = notes.find("Build ID: ");
  if (at == std::string::npos) return {};
  return notes.substr(at + 10, notes.find('\n', at) - at - 10);
}

TEST_F(SplitDebug, BuildIdFoundUnderTheDebugRoot) {
  const std::string module = dir_ / "by_id/prog";
  strip_into(module, false);
  const std::string id = build_id(module);
  ASSERT_GE(id.size(), 4u);
  const TempDir root;
  const std::string debug_file = root.path + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories(fs::path(debug_file).parent_path());
  fs::copy_file(debug_, debug_file);
  auto lines = SourceLines::open(module, root.path);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), debug_file);
  expect_same_lines(*lines);
}

// Another build's debug file at this build-id's path carries another
// build-id: refused.
TEST_F(SplitDebug, BuildIdPathWithAnotherBuildIsRefused) {
  const std::string module = dir_ / "other_id/prog";
  strip_into(module, false);
  const std::string id = build_id(module);
  ASSERT_GE(id.size(), 4u);
  const std::string other = compile(Build{"gcc", false}, dir_);
  ASSERT_NE(build_id(other), id);
  const TempDir root;
  const std::string debug_file = root.path + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories(fs::path(debug_file).parent_path());
  command_output("objcopy --only-keep-debug '" + other + "' '" + debug_file + "'");
  auto lines = SourceLines::open(module, root.path);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), "");
}

// Debian's libc is stripped; libc6-dbg installs its DWARF by build-id under
// /usr/lib/debug, where eu-addr2line finds it too.
TEST(SourceLines, DebianLibcFromItsBuildIdDebugFile) {
  const std::string id = build_id(kLibc);
  ASSERT_GE(id.size(), 4u);
  const std::string debug_file = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  struct stat status;
  ASSERT_EQ(stat(debug_file.c_str(), &status), 0) << "install the Debian package libc6-dbg (scripts/install-deps.sh)";
  auto lines = SourceLines::open(kLibc);
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), debug_file);
  std::vector<uint64_t> addresses;
  for (const std::string& line : command_lines(std::string("nm -D --defined-only ") + kLibc)) {
    std::istringstream fields(line);
    std::string address, type;
    if (fields >> address >> type && (type == "T" || type == "i") && addresses.size() < 400) {
      addresses.push_back(std::stoull(address, nullptr, 16));
    }
  }
  ASSERT_GT(addresses.size(), 300u);
  const TempDir dir;
  // eu-addr2line and gdb agree here; binutils' addr2line picks another of
  // the rows at some addresses (0x35300, __ctype_b_loc: ctype-info.c where
  // both say include/ctype.h, the inlined function's line).
  const auto expected = peer_lines("eu-addr2line", kLibc, addresses, dir);
  ASSERT_EQ(expected.size(), addresses.size());
  size_t with_line = 0;
  for (size_t index = 0; index < addresses.size(); ++index) {
    const auto ours = lines->at(addresses[index]);
    SCOPED_TRACE(::testing::Message() << std::hex << "0x" << addresses[index]);
    ASSERT_EQ(describe(ours), describe(expected[index]));
    with_line += ours.has_value();
  }
  EXPECT_GT(with_line, addresses.size() / 2);
}

TEST(SourceLines, ModuleWithoutDwarfIsNotAnError) {
  // The stripped fixture has a build-id but nothing under /usr/lib/debug and no debuglink.
  auto lines = SourceLines::open(test::fixture_path("calls_pie_stripped"));
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->debug_file(), "");
  EXPECT_FALSE(lines->at(0x1000));
}

TEST(SourceLines, InputsThatAreNoModule) {
  auto missing = SourceLines::open("/nonexistent/xref/module");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
  EXPECT_NE(missing.error().message.find("/nonexistent/xref/module"), std::string::npos);
  const TempDir dir;
  auto directory = SourceLines::open(dir.path);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, ErrorCode::elf_error);
  const std::string text = dir / "text";
  std::ofstream(text) << "not an ELF file, long enough to look at its header\n";
  auto not_elf = SourceLines::open(text);
  ASSERT_FALSE(not_elf);
  EXPECT_EQ(not_elf.error().code, ErrorCode::elf_error);
  // A FIFO is neither read nor waited on.
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto pipe = SourceLines::open(fifo);
  ASSERT_FALSE(pipe);
  EXPECT_EQ(pipe.error().code, ErrorCode::elf_error);
}

// Cut and scribbled copies of a module with DWARF open without harm; what
// they answer is whatever is left, and every answer names a line.
TEST(SourceLines, DamagedModulesAreSafe) {
  const TempDir dir;
  const std::string path = compile(Build{"gcc", true}, dir);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::vector<uint64_t> addresses = instruction_addresses(path);
  const std::string damaged = dir / "damaged";
  const auto check = [&](const std::string& content) {
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << content;
    auto lines = SourceLines::open(damaged);
    if (!lines) return;
    for (size_t index = 0; index < addresses.size(); index += 7) {
      if (const auto line = lines->at(addresses[index])) {
        EXPECT_GT(line->line, 0u);
      }
    }
  };
  for (size_t part = 1; part < 32; ++part) check(bytes.substr(0, bytes.size() * part / 32));
  uint32_t state = 12345;
  for (int round = 0; round < 64; ++round) {
    std::string scribbled = bytes;
    for (int flip = 0; flip < 64; ++flip) {
      state = state * 1103515245u + 12345u;
      // Past the code: the DWARF sections sit at the end of the file.
      const size_t at = bytes.size() / 2 + state % (bytes.size() / 2);
      scribbled[at] = static_cast<char>(state >> 16);
    }
    check(scribbled);
  }
}

}  // namespace
}  // namespace xref
