#include "demangle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref {
namespace {

using test::try_command_lines;

// Ground truth: binutils' c++filt. Its default is "verbose" (Rust hashes and
// v0 crate disambiguators shown, std::string spelled out); -i matches what
// xref displays.
std::vector<std::string> cxxfilt(const std::vector<std::string>& names) {
  const std::string path =
      ::testing::TempDir() + "xref_demangle_" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(path);
    for (const auto& name : names) out << name << '\n';
  }
  auto lines = try_command_lines("c++filt -i < '" + path + "'");
  std::remove(path.c_str());
  EXPECT_TRUE(lines) << "c++filt failed";
  return lines ? *lines : std::vector<std::string>{};
}

// Defined function symbols (types t, T, w, W, i) of an image, from nm.
std::vector<std::string> function_symbols(const std::string& path) {
  auto lines = try_command_lines("nm --defined-only '" + path + "'");
  EXPECT_TRUE(lines) << "nm failed on " << path;
  std::set<std::string> names;  // a local name may appear in several files
  if (lines) {
    for (const auto& line : *lines) {
      if (line.size() < 20 || line[16] != ' ' || line[18] != ' ') continue;
      if (std::string("tTwWi").find(line[17]) == std::string::npos) continue;
      names.insert(line.substr(19));
    }
  }
  return {names.begin(), names.end()};
}

void expect_matches_cxxfilt(const std::vector<std::string>& names) {
  const auto expected = cxxfilt(names);
  ASSERT_EQ(expected.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(demangle(names[i]), expected[i]) << names[i];
}

TEST(Demangle, CNamesAreUnchanged) {
  const auto names = function_symbols(std::string(XREF_FIXTURE_DIR) + "/calls_pie");
  ASSERT_FALSE(names.empty());
  for (const auto& name : names) EXPECT_EQ(demangle(name), name);
  expect_matches_cxxfilt(names);
}

TEST(Demangle, ItaniumNames) {
  const std::vector<std::string> names = {
      "_ZN3foo3barEv",
      "_Z1fSs",  // std::string, not spelled out
      "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE6appendEPKcm",
      "_ZNKSt6vectorIiSaIiEE4sizeEv",
      "_ZZ4mainENKUlvE_clEv",  // a lambda's operator()
      "_ZN4xref8demangleB5cxx11ESt17basic_string_viewIcSt11char_traitsIcEE",  // an ABI tag
      "_Z3foov.cold",
      "_ZN3foo3barEi.constprop.0",
      "_ZdlPvm",
      "_ZNSt6thread11_State_implINS_8_InvokerISt5tupleIJPFvvEEEEEE6_M_runEv",
      "_ZTV3Foo",
      "_ZThn8_N3Foo3barEv",
      "_ZGVZ4mainE1x",
      "_ZN9__gnu_cxx13new_allocatorIcED2Ev",
  };
  expect_matches_cxxfilt(names);
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("_Z1fSs"), "f(std::string)");
}

// Every C++ function in this test binary: thousands of real names.
TEST(Demangle, ThisBinarysCppSymbols) {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(length, 0);
  std::vector<std::string> names;
  for (auto& name : function_symbols(std::string(self, static_cast<size_t>(length)))) {
    if (name.starts_with("_Z")) names.push_back(std::move(name));
  }
  ASSERT_GT(names.size(), 100u);
  expect_matches_cxxfilt(names);
}

bool is_rust_mangled(const std::string& name) {
  static const std::regex legacy(R"(^_ZN.*17h[0-9a-f]{16}E(\..*)?$)");
  return name.starts_with("_R") || std::regex_match(name, legacy);
}

TEST(Demangle, RustFixtureSymbols) {
  std::vector<std::string> names;
  size_t v0 = 0;
  for (auto& name : function_symbols(std::string(XREF_FIXTURE_DIR) + "/rust_sample")) {
    if (!is_rust_mangled(name)) continue;
    v0 += name.starts_with("_R");
    names.push_back(std::move(name));
  }
  ASSERT_GT(names.size(), 50u);
  // rustc mangles this crate "legacy" by default; recent toolchains ship a
  // v0-mangled std, older ones a legacy one.
  std::printf("rust_sample: %zu Rust function symbols, %zu of them v0\n", names.size(), v0);
  expect_matches_cxxfilt(names);

  std::multiset<std::string> demangled;
  static const std::regex hash_suffix(R"(::h[0-9a-f]{16}$)");
  for (const auto& name : names) {
    demangled.insert(demangle(name));
    EXPECT_FALSE(std::regex_search(demangle(name), hash_suffix)) << name;
  }
  for (const char* known :
       {"rust_sample::main", "rust_sample::some_fn", "rust_sample::apply",
        "rust_sample::checked_ratio", "rust_sample::ledger::Account::deposit"}) {
    EXPECT_EQ(demangled.count(known), 1u) << known;
  }
  EXPECT_EQ(demangled.count("rust_sample::generic_sum"), 2u);  // u64 and f64
  EXPECT_EQ(demangled.count("rust_sample::main::{{closure}}"), 2u);
}

TEST(Demangle, RustLiterals) {
  EXPECT_EQ(demangle("_ZN1r3foo17hd574e17d416be3e0E"), "r::foo");
  EXPECT_EQ(demangle("_ZN1r3foo17hd574e17d416be3e0E.llvm.12345"), "r::foo");
  EXPECT_EQ(demangle("_ZN11rust_sample4main28_$u7b$$u7b$closure$u7d$$u7d$17h86cfb7e96da67df6E"),
            "rust_sample::main::{{closure}}");
  EXPECT_EQ(demangle("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$"
                     "u7b$closure$u7d$"
                     "$u7d$$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
  EXPECT_EQ(demangle("_RNvCs1234_3foo3bar"), "foo::bar");
  EXPECT_EQ(demangle("_RNvCs1234_3foo3bar.llvm.77"), "foo::bar");
  EXPECT_EQ(demangle("_RNvMNtCs1234_3foo6ledgerNtB2_7Account7deposit"),
            "<foo::ledger::Account>::deposit");
  // A hash-like segment that does not end the path: an Itanium name.
  EXPECT_EQ(demangle("_ZN3foo17h0123456789abcdef3barEv"), "foo::h0123456789abcdef::bar()");
  // A C++ name with a hash-like last segment, as c++filt reads it.
  expect_matches_cxxfilt({"_ZN1a17h0123456789abcdefE", "_ZN3foo17h0123456789abcdef3barEv"});
}

TEST(Demangle, NotMangledOrGarbageIsReturnedUnchanged) {
  for (const char* name :
       {"", "main", "_start", "leaf_add", "_Z", "_ZN", "_R", "_RN", "_Zfoo", "_ZN3foo",
        "_ZN1r3foo17hd574e17d416be3e0", "_RNvCs1234_3foo", "i", "Ss", "_GLOBAL__sub_I_main",
        "printf@GLIBC_2.2.5", "__libc_start_main@@GLIBC_2.34"}) {
    EXPECT_EQ(demangle(name), name);
  }
  const std::string with_nul("_ZN3foo3barEv\0x", 15);
  EXPECT_EQ(demangle(with_nul), with_nul);
}

// Random names in the mangling alphabets must never crash or hang.
TEST(Demangle, SurvivesRandomInput) {
  const std::string alphabet = "0123456789_$.NEIJvicSsStaRCMBTuUXYZQLKrDdpPhx";
  std::mt19937 random(4242);
  for (int round = 0; round < 20000; ++round) {
    std::string name = round % 3 == 0 ? "_R" : round % 3 == 1 ? "_ZN" : "_Z";
    const size_t length = random() % 48;
    for (size_t i = 0; i < length; ++i) name.push_back(alphabet[random() % alphabet.size()]);
    if (round % 7 == 0) name += "17h0123456789abcdefE";
    (void)demangle(name);
  }
}

// Without the parameter list: what c++filt -p prints (-i: std::string as
// nm -C and __cxa_demangle spell it), for every C++ function of libstdc++'s
// .dynsym and of names_target (a lambda inside a function, std::function's
// handler, templates with return types, operators). c++filt -p keeps the
// parameters of thunks and transaction clones; those are left out.
TEST(Demangle, WithoutParametersEqualsCxxfiltNoParams) {
  std::vector<std::string> mangled;
  for (const std::string& path : {std::string(XREF_NAMES_TARGET), std::string("/lib/x86_64-linux-gnu/libstdc++.so.6")}) {
    auto lines = try_command_lines("nm --defined-only -D '" + path + "' 2>/dev/null; nm --defined-only '" + path +
                                   "' 2>/dev/null; true");
    ASSERT_TRUE(lines);
    for (const auto& line : *lines) {
      std::istringstream fields(line);
      std::string address, type, name;
      if (!(fields >> address >> type >> name) || !name.starts_with("_Z")) continue;
      if (type != "T" && type != "t" && type != "W" && type != "w" && type != "i") continue;
      mangled.push_back(name.substr(0, name.find('@')));
    }
  }
  std::sort(mangled.begin(), mangled.end());
  mangled.erase(std::unique(mangled.begin(), mangled.end()), mangled.end());
  ASSERT_GT(mangled.size(), 1000u);
  const std::string path = ::testing::TempDir() + "xref_no_params_" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(path);
    for (const auto& name : mangled) out << name << '\n';
  }
  auto plain = try_command_lines("c++filt -i -p < '" + path + "'");
  auto full = try_command_lines("c++filt -i < '" + path + "'");
  std::remove(path.c_str());
  ASSERT_TRUE(plain && full);
  ASSERT_EQ(plain->size(), mangled.size());
  size_t compared = 0;
  bool lambda_seen = false;
  for (size_t i = 0; i < mangled.size(); ++i) {
    const std::string& whole = (*full)[i];
    if (whole.find("thunk to ") != std::string::npos || whole.starts_with("transaction clone for ")) continue;
    EXPECT_EQ(short_function_name(demangle(mangled[i])), (*plain)[i]) << whole;
    lambda_seen |= (*plain)[i] == "lam_f(int)::{lambda(int)#1}::operator()";
    ++compared;
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_TRUE(lambda_seen);
  EXPECT_EQ(without_parameters("lam_f(int) [clone .cold]"), "lam_f");
  EXPECT_EQ(without_parameters("main"), "main");
  EXPECT_EQ(without_return_type("names::twice<int>"), "");
}

}  // namespace
}  // namespace xref
