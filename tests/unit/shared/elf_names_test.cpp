// How ElfImage names things, against nm, readelf and c++filt: C++ names with
// and without parameters, nested names, the preference for exact matches,
// GOT slots, sonames, symbol versions, separate debug files, and the
// symbols of an unstripped twin.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <sstream>

#include "build_check.h"
#include "command_output.h"
#include "elf_image.h"

namespace xref {
namespace {

using test::command_lines;
using test::command_output;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

// nm's defined symbols: name -> address.
std::map<std::string, uint64_t> nm_addresses(const std::string& flags, const std::string& path) {
  std::map<std::string, uint64_t> addresses;
  for (const auto& line : command_lines("nm --defined-only " + flags + " '" + path + "'")) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (!(fields >> address >> type) || !std::getline(fields, name) || name.size() < 2) continue;
    addresses[name.substr(1)] = std::stoull(address, nullptr, 16);
  }
  return addresses;
}

std::vector<uint64_t> starts(const std::vector<FunctionMatch>& matches) {
  std::vector<uint64_t> vas;
  for (const auto& match : matches) vas.push_back(match.function->start);
  return vas;
}

TEST(ElfNames, CppNamesWithAndWithoutParametersAsNmPrintsThem) {
  auto image = ElfImage::open(XREF_NAMES_TARGET);
  ASSERT_TRUE(image);
  const auto nm = nm_addresses("-C", XREF_NAMES_TARGET);
  const std::string lambda = "lam_f(int)::{lambda(int)#1}::operator()(int) const";
  const std::string invoke =
      "std::_Function_handler<int (int), lam_f(int)::{lambda(int)#1}>::_M_invoke(std::_Any_data const&, int&&)";
  const std::map<std::string, std::string> queries = {
      {"lam_f", "lam_f(int)"},  // not inner::lam_f(int), not the lambda in it, not its .cold part
      {"lam_f(int)", "lam_f(int)"},
      {lambda, lambda},
      {"lam_f(int)::{lambda(int)#1}::operator()", lambda},
      {invoke, invoke},
      {"std::_Function_handler<int (int), lam_f(int)::{lambda(int)#1}>::_M_invoke", invoke},
      {"names::twice<int>", "int names::twice<int>(int)"},
      {"int names::twice<int>(int)", "int names::twice<int>(int)"},
      {"inner::lam_f", "inner::lam_f(int)"},
      {"{lambda(int)#1}::operator()", lambda},  // a nested name's trailing scopes
      {"twice<double>", "double names::twice<double>(double)"},
  };
  for (const auto& [query, expected] : queries) {
    const auto found = image->match_functions(query);
    ASSERT_EQ(found.size(), 1u) << query;
    EXPECT_EQ(found[0].function->start, nm.at(expected)) << query;
    EXPECT_EQ(found[0].function->demangled, expected) << query;
  }
  EXPECT_EQ(image->match_functions("lam_f")[0].match, NameMatch::exact);
  EXPECT_EQ(image->match_functions("twice<double>")[0].match, NameMatch::scope_suffix);
  // Overloads: both, for the caller to refuse.
  auto overloads = starts(image->match_functions("ovl"));
  std::sort(overloads.begin(), overloads.end());
  std::vector<uint64_t> expected = {nm.at("ovl(int)"), nm.at("ovl(double)")};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(overloads, expected);
  // Not a scope boundary: "(int)::{lambda..." is inside lam_f(int).
  EXPECT_TRUE(image->match_functions("int)::{lambda(int)#1}::operator()").empty());
}

TEST(ElfNames, GotSlotsEqualReadelfRelocations) {
  for (const std::string& path : {std::string(XREF_NAMES_TARGET), std::string(kLibc)}) {
    auto image = ElfImage::open(path);
    ASSERT_TRUE(image) << path;
    std::set<std::string> expected;
    for (const auto& line : command_lines("readelf -rW '" + path + "'")) {
      std::istringstream fields(line);
      std::string offset, info, type, value, name;
      if (!(fields >> offset >> info >> type)) continue;
      if (type == "R_X86_64_JUMP_SLOT" || type == "R_X86_64_GLOB_DAT") {
        if (!(fields >> value >> name)) continue;
        expected.insert(type.substr(9) + " " + std::to_string(std::stoull(offset, nullptr, 16)) + " " +
                        name.substr(0, name.find('@')));
      } else if (type == "R_X86_64_IRELATIV" || type == "R_X86_64_IRELATIVE") {
        if (!(fields >> value)) continue;
        expected.insert("IRELATIVE " + std::to_string(std::stoull(offset, nullptr, 16)) + " " +
                        std::to_string(std::stoull(value, nullptr, 16)));
      }
    }
    std::set<std::string> read;
    for (const GotSlot& slot : image->got_slots()) {
      switch (slot.kind) {
        case GotSlot::Kind::jump_slot: read.insert("JUMP_SLOT " + std::to_string(slot.va) + " " + slot.symbol); break;
        case GotSlot::Kind::glob_dat: read.insert("GLOB_DAT " + std::to_string(slot.va) + " " + slot.symbol); break;
        case GotSlot::Kind::irelative:
          read.insert("IRELATIVE " + std::to_string(slot.va) + " " + std::to_string(slot.resolver));
          break;
      }
    }
    EXPECT_FALSE(expected.empty()) << path;
    EXPECT_EQ(read, expected) << path;
  }
}

TEST(ElfNames, SonameIfuncAndVersionsOfLibc) {
  auto image = ElfImage::open(kLibc);
  ASSERT_TRUE(image);
  const std::string dynamic = command_output(std::string("readelf -d ") + kLibc);
  const size_t at = dynamic.find("Library soname: [");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(image->soname(), dynamic.substr(at + 17, dynamic.find(']', at) - at - 17));

  const auto dynamic_symbols = nm_addresses("-D", kLibc);
  // nm -D marks IFUNCs 'i'; the plain name is the default version.
  for (const std::string name : {"strlen", "memset", "strcmp", "memcpy"}) {
    const auto found = image->find_functions(name);
    ASSERT_EQ(found.size(), 1u) << name;
    EXPECT_TRUE(found[0]->ifunc) << name;
    EXPECT_EQ(found[0]->start, dynamic_symbols.at(name + "@@" + (name == "memcpy" ? "GLIBC_2.14" : "GLIBC_2.2.5")));
  }
  // The older memcpy is reachable by its versioned name, as nm -D spells it.
  const auto old_memcpy = image->find_functions("memcpy@GLIBC_2.2.5");
  ASSERT_EQ(old_memcpy.size(), 1u);
  EXPECT_EQ(old_memcpy[0]->start, dynamic_symbols.at("memcpy@GLIBC_2.2.5"));
  // Aliases at one address: the spelling that matched is reported.
  for (const std::string name : {"getpid", "__getpid"}) {
    const auto found = image->match_functions(name);
    ASSERT_EQ(found.size(), 1u) << name;
    EXPECT_EQ(found[0].spelled, name);
    EXPECT_EQ(found[0].function->start, dynamic_symbols.at(name + "@@GLIBC_2.2.5"));
  }
}

TEST(ElfNames, SeparateDebugFileNamesLocalFunctions) {
  const std::string notes = command_output(std::string("readelf -n ") + kLibc);
  const size_t at = notes.find("Build ID: ");
  ASSERT_NE(at, std::string::npos);
  const std::string id = notes.substr(at + 10, notes.find('\n', at) - at - 10);
  const std::string debug = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  auto image = ElfImage::open(kLibc);
  ASSERT_TRUE(image);
  struct stat status;
  if (stat(debug.c_str(), &status) != 0) {
    EXPECT_EQ(image->symbols_path(), kLibc);
    GTEST_SKIP() << "no debug file for libc (" << debug << "); install libc6-dbg";
  }
  EXPECT_EQ(image->symbols_path(), debug);
  const auto local = nm_addresses("", debug);
  const auto found = image->find_functions("__strlen_sse2");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]->start, local.at("__strlen_sse2"));
}

TEST(ElfNames, StrippedImageTakesItsTwinsSymbols) {
  const std::string twin = XREF_TRACE_TARGET;
  auto stripped = ElfImage::open(twin + "_stripped");
  auto unstripped = ElfImage::open(twin);
  ASSERT_TRUE(stripped && unstripped);
  EXPECT_FALSE(stripped->has_symtab());
  EXPECT_TRUE(stripped->find_functions("svc::handle_request").empty());
  const ElfImage named = stripped->with_symbols_of(*unstripped);
  EXPECT_EQ(named.symbols_path(), twin);
  const auto nm = nm_addresses("-C", twin);
  for (const auto& [name, va] : nm) {
    if (!name.starts_with("svc::")) continue;
    const auto found = named.find_functions(name);
    ASSERT_EQ(found.size(), 1u) << name;
    EXPECT_EQ(found[0]->start, va) << name;
    // The code is the stripped file's own.
    EXPECT_EQ(named.bytes_at(va, 16)->data(), stripped->bytes_at(va, 16)->data());
  }

  // Same build-id, other bytes: the same build; another build-id: not.
  auto same = compare_build(*unstripped, twin, stripped->build_id(),
                            command_output("sha256sum '" + twin + "_stripped'").substr(0, 64), "the process's");
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->difference.empty());
  EXPECT_TRUE(same->other_bytes);
  auto other = compare_build(*unstripped, twin, std::string(40, 'a'), "", "the process's");
  ASSERT_TRUE(other);
  EXPECT_NE(other->difference.find("build-id " + unstripped->build_id() + " differs"), std::string::npos);
  // Without a build-id to compare, the SHA-256 decides.
  auto by_digest = compare_build(*unstripped, twin, "", std::string(64, '0'), "the process's");
  ASSERT_TRUE(by_digest);
  EXPECT_NE(by_digest->difference.find("SHA-256 differs"), std::string::npos);
}

}  // namespace
}  // namespace xref
