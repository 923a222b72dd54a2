// The data objects of an image (shared/data_symbols.h) against readelf -sW:
// every defined OBJECT and TLS symbol of .symtab and .dynsym, with its value,
// size and section, found by name (C++ ones by the name c++filt prints too)
// and by any address inside it; on trace_target (C++, a .symtab with locals
// and thread-locals) and the system's libc (.dynsym only).
#include "data_symbols.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "command_output.h"

namespace xref {
namespace {

struct ReadelfObject {
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
  bool tls = false;
  std::string section;

  auto key() const { return std::make_tuple(name, value, size, tls, section); }
};

// readelf -SW: section index -> name, for the sections loaded in memory
// (flag A); the others map to "-".
std::map<unsigned, std::string> readelf_sections(const std::string& path) {
  std::map<unsigned, std::string> sections;
  for (const auto& line : test::command_lines("readelf -SW " + path + " 2>/dev/null")) {
    const size_t open = line.find('[');
    const size_t close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    const std::string index = line.substr(open + 1, close - open - 1);
    if (index.find_first_not_of(" 0123456789") != std::string::npos || index.find_first_of("0123456789") == std::string::npos) {
      continue;
    }
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> words;
    for (std::string word; rest >> word;) words.push_back(word);
    if (words.empty()) continue;
    // Name Type Address Off Size ES [Flg] Lk Inf Al: Flg is absent when empty.
    const bool loaded = words.size() == 10 && words[6].find('A') != std::string::npos;
    sections[static_cast<unsigned>(std::stoul(index))] = loaded ? words[0] : "-";
  }
  return sections;
}

using ObjectKey = std::tuple<std::string, uint64_t, uint64_t, bool, std::string>;

// readelf -sW: the defined OBJECT and TLS symbols of both tables (of .symtab
// only with symtab_only), names without their "@VERSION".
void readelf_objects(const std::string& path, bool symtab_only, std::set<ObjectKey>& objects) {
  const auto sections = readelf_sections(path);
  bool in_symtab = false;
  for (const auto& line : test::command_lines("readelf -sW " + path + " 2>/dev/null")) {
    if (line.rfind("Symbol table '", 0) == 0) in_symtab = line.rfind("Symbol table '.symtab'", 0) == 0;
    if (symtab_only && !in_symtab) continue;
    std::istringstream fields(line);
    std::string number, value, size, type, bind, visibility, index, name;
    if (!(fields >> number >> value >> size >> type >> bind >> visibility >> index >> name)) continue;
    if (number.empty() || number.back() != ':' || (type != "OBJECT" && type != "TLS")) continue;
    if (index == "UND" || index == "ABS" || index == "COM") continue;
    if (sections.at(static_cast<unsigned>(std::stoul(index))) == "-") continue;  // not loaded
    if (const size_t at = name.find('@'); at != std::string::npos) name = name.substr(0, at);
    ReadelfObject object{name, std::stoull(value, nullptr, 16),
                         size.rfind("0x", 0) == 0 ? std::stoull(size, nullptr, 16) : std::stoull(size), type == "TLS",
                         sections.at(static_cast<unsigned>(std::stoul(index)))};
    objects.insert(object.key());
  }
}

ElfImage open_image(const std::string& path) {
  auto image = ElfImage::open(path);
  if (!image) throw std::runtime_error(path + ": " + image.error().message);
  return std::move(image).value();
}

// The image's own tables, and the .symtab of the separate debug file that
// names its functions when there is one (Debian's libc6-dbg for libc).
void expect_as_readelf_lists(const std::string& path) {
  const ElfImage image = open_image(path);
  const DataSymbols symbols = DataSymbols::read(image);
  std::set<ObjectKey> ours;
  for (const DataSymbol& symbol : symbols.symbols()) {
    ours.insert(std::make_tuple(symbol.name, symbol.start, symbol.size, symbol.tls, symbol.section));
  }
  EXPECT_EQ(ours.size(), symbols.symbols().size());
  std::set<ObjectKey> expected;
  readelf_objects(path, false, expected);
  if (image.symbols_path() != path) readelf_objects(image.symbols_path(), true, expected);
  ASSERT_GT(expected.size(), 20u);
  auto missing_from = [](const std::set<ObjectKey>& from, const std::set<ObjectKey>& of) {
    std::string text;
    for (const auto& key : of) {
      if (from.count(key) == 0) {
        text += "\n  " + std::get<0>(key) + " " + std::to_string(std::get<1>(key)) + " " +
                std::to_string(std::get<2>(key)) + " " + std::get<4>(key);
      }
    }
    return text;
  };
  EXPECT_EQ(ours.size(), expected.size());
  EXPECT_EQ(missing_from(ours, expected), "") << "readelf lists, we do not";
  EXPECT_EQ(missing_from(expected, ours), "") << "we list, readelf does not";

  size_t sized = 0;
  for (const auto& [name, value, size, tls, section] : expected) {
    SCOPED_TRACE(name);
    const auto named = symbols.named(name);
    EXPECT_TRUE(std::any_of(named.begin(), named.end(), [&](const DataSymbol* s) { return s->start == value; }));
    if (tls || size == 0) continue;
    ++sized;
    // Any byte of the object names it (or an alias at the same start).
    for (uint64_t va : {value, value + size / 2, value + size - 1}) {
      const DataSymbol* holder = symbols.containing(va);
      ASSERT_NE(holder, nullptr) << std::hex << va;
      EXPECT_TRUE(holder->contains(va)) << holder->name;
      // This object, or one that starts nearer va and holds it too (the
      // linker merges string literals: libc's "slashdot.0" ends "dir_suffix").
      EXPECT_GE(holder->start, value) << holder->name;
    }
  }
  EXPECT_GT(sized, 10u);
}

TEST(DataSymbols, TraceTargetAsReadelfListsThem) { expect_as_readelf_lists(XREF_TRACE_TARGET); }

TEST(DataSymbols, LibcAsReadelfListsThem) { expect_as_readelf_lists("/lib/x86_64-linux-gnu/libc.so.6"); }

TEST(DataSymbols, CppObjectsByTheirDemangledNameAndAPlaceInside) {
  const DataSymbols symbols = DataSymbols::read(open_image(XREF_TRACE_TARGET));
  // nm -C spells _ZN12_GLOBAL__N_111record_lockE "(anonymous namespace)::record_lock".
  uint64_t start = 0, size = 0;
  for (const auto& line : test::command_lines(std::string("nm -S --defined-only ") + XREF_TRACE_TARGET)) {
    std::istringstream fields(line);
    std::string value, length, type, name;
    if (fields >> value >> length >> type >> name && name == "_ZN12_GLOBAL__N_111record_lockE") {
      start = std::stoull(value, nullptr, 16);
      size = std::stoull(length, nullptr, 16);
    }
  }
  ASSERT_GT(size, 8u);
  const auto named = symbols.named("(anonymous namespace)::record_lock");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0]->start, start);
  EXPECT_EQ(named[0]->size, size);
  EXPECT_EQ(named[0]->section, ".bss");
  EXPECT_TRUE(named[0]->local);
  const DataSymbol* holder = symbols.containing(start + 8);
  ASSERT_NE(holder, nullptr);
  EXPECT_EQ(data_symbol_place(*holder, start + 8), "_ZN12_GLOBAL__N_111record_lockE+0x8");
  EXPECT_EQ(data_symbol_place(*holder, start), "_ZN12_GLOBAL__N_111record_lockE");
  // The byte after it is another object's, or none.
  const DataSymbol* after = symbols.containing(start + size);
  EXPECT_TRUE(after == nullptr || after->start != start);
  EXPECT_TRUE(symbols.named("no_such_object_anywhere").empty());
}

TEST(DataSymbols, LibcObjectsByName) {
  const DataSymbols symbols = DataSymbols::read(open_image("/lib/x86_64-linux-gnu/libc.so.6"));
  for (const char* name : {"environ", "stdout", "program_invocation_name"}) {
    SCOPED_TRACE(name);
    const auto named = symbols.named(name);
    ASSERT_FALSE(named.empty());
    EXPECT_EQ(named[0]->size, 8u);
    EXPECT_FALSE(named[0]->tls);
    EXPECT_FALSE(named[0]->local);
  }
}

}  // namespace
}  // namespace xref
