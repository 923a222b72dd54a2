// The store sites of `xref watch --backend stores` (sites/store_sites.h)
// against objdump: every instruction objdump shows writing memory inside a
// function is found, and no other; each memory operand is the one objdump
// prints; the stores of store_sites_target (gcc and clang -O2) are checked
// by hand; and in the system's libc the EVEX stores are counted and never
// probed, nor is any after-probe put on an EVEX instruction.
#include "sites/store_sites.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <iterator>
#include <cstddef>
#include <set>

#include "data_symbols.h"
#include "hex.h"
#include "objdump_listing.h"
#include "objdump_stores.h"
#include "x86_registers.h"

namespace xref {
namespace {

using test::ObjdumpIntelLine;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

std::string target_path(const std::string& compiler) {
  return std::string(XREF_TARGETS_DIR) + "/store_sites_target-" + compiler;
}

ElfImage open_image(const std::string& path) {
  auto image = ElfImage::open(path);
  if (!image) throw std::runtime_error(path + ": " + image.error().message);
  return std::move(image).value();
}

StoreSiteTable find_all(const ElfImage& image) {
  auto table = find_store_sites(image, image.all_functions());
  if (!table) throw std::runtime_error(table.error().message);
  return std::move(table).value();
}

uint16_t pt_regs_offset(const std::string& name) {
  if (name.empty()) return XREF_WATCH_NO_REG;
  const auto reg = register_from_name(name);
  if (!reg) throw std::runtime_error("not a 64-bit general register: " + name);
  return register_pt_regs_offset(*reg);
}

// EVEX by the bytes, independently of the decoders: after legacy prefixes,
// 0x62 (BOUND, its only other meaning, does not exist in 64-bit mode).
bool evex_bytes(const ElfImage& image, uint64_t va) {
  const auto bytes = image.bytes_at(va, 1);
  if (!bytes) return false;
  for (uint64_t at = va;; ++at) {
    const auto byte = image.bytes_at(at, 1);
    if (!byte) return false;
    switch ((*byte)[0]) {
      case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
      case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64: case 0x65: continue;
      default: return (*byte)[0] == 0x62;
    }
  }
}

// A prefix the kernel refuses a uprobe on (lock, es/cs/ss/ds), by the bytes.
bool refused_prefix(const ElfImage& image, uint64_t va) {
  for (uint64_t at = va;; ++at) {
    const auto byte = image.bytes_at(at, 1);
    if (!byte) return false;
    switch ((*byte)[0]) {
      case 0xf0: case 0x26: case 0x2e: case 0x36: case 0x3e: return true;
      case 0x66: case 0x67: case 0xf2: case 0xf3: case 0x64: case 0x65: continue;
      default: return false;
    }
  }
}

// objdump's store lines inside the functions the table was made from.
std::set<uint64_t> objdump_stores_in(const StoreSiteTable& table, const std::map<uint64_t, ObjdumpIntelLine>& lines) {
  std::set<uint64_t> stores;
  for (const StoreFunction& function : table.functions) {
    for (auto it = lines.lower_bound(function.start); it != lines.end() && it->first < function.start + function.size;
         ++it) {
      if (test::objdump_is_store(it->second)) stores.insert(it->first);
    }
  }
  return stores;
}

std::set<uint64_t> listed_stores(const StoreSiteTable& table) {
  std::set<uint64_t> stores;
  for (const StoreSite& site : table.sites) {
    if (site.store_class != StoreClass::undecodable) stores.insert(site.va);
  }
  return stores;
}

std::string describe(const std::set<uint64_t>& vas, const std::map<uint64_t, ObjdumpIntelLine>& lines) {
  std::string text;
  size_t shown = 0;
  for (uint64_t va : vas) {
    if (++shown > 20) break;
    auto line = lines.find(va);
    text += "\n  " + to_hex(va) + (line == lines.end() ? std::string(" (no objdump line)") : " " + line->second.mnemonic);
    if (line != lines.end()) {
      for (const auto& operand : line->second.operand_list) text += " " + operand;
    }
  }
  return text;
}

// The site's operand is objdump's memory operand: base, index, scale, disp
// (a rip-relative one: the VA in objdump's comment), width, and for mov its
// source register or immediate.
void expect_operand_as_objdump_prints(const StoreSite& site, const ObjdumpIntelLine& line) {
  SCOPED_TRACE(to_hex(site.va) + " " + site.text);
  if (site.store_class == StoreClass::undecodable || site.store_class == StoreClass::evex ||
      site.store_class == StoreClass::unbounded || line.operand_list.empty()) {
    return;
  }
  // push m and call m read their operand; xchg r, m writes the second.
  if (test::starts_with_word(line.mnemonic, "push") || test::starts_with_word(line.mnemonic, "call")) return;
  const auto memory = test::objdump_memory(line.operand_list[0]);
  if (!memory) return;
  if (site.store_class == StoreClass::segment) {
    EXPECT_TRUE(memory->segment == "fs" || memory->segment == "gs") << memory->segment;
    return;
  }
  if (memory->width != 0) {
    EXPECT_EQ(site.operand.width, memory->width);
  }
  if (memory->base == "rip") {
    EXPECT_EQ(site.store_class, StoreClass::rip_static);
    ASSERT_TRUE(line.comment_address());
    EXPECT_EQ(site.target_va, *line.comment_address());
    EXPECT_EQ(static_cast<uint64_t>(site.operand.disp), *line.comment_address());
    EXPECT_EQ(site.operand.base_offset, XREF_WATCH_NO_REG);
    return;
  }
  EXPECT_EQ(site.operand.base_offset, pt_regs_offset(memory->base));
  EXPECT_EQ(site.operand.index_offset, pt_regs_offset(memory->index));
  if (!memory->index.empty()) {
    EXPECT_EQ(site.operand.scale, memory->scale);
  }
  EXPECT_EQ(site.operand.disp, memory->disp);
  if (line.mnemonic == "mov" && line.operand_list.size() == 2) {
    const std::string& source = line.operand_list[1];
    if (test::starts_with_word(source, "0x")) {
      ASSERT_EQ(site.operand.source, XREF_SOURCE_IMMEDIATE);
      const uint64_t value = std::stoull(source, nullptr, 16);
      const uint64_t mask = site.operand.width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * site.operand.width)) - 1;
      EXPECT_EQ(site.operand.immediate & mask, value & mask);
      if (site.operand.width == 8) {
        EXPECT_EQ(site.operand.immediate, value);  // objdump prints it sign-extended
      }
    } else if (const auto reg = register_from_name(source)) {
      EXPECT_EQ(site.operand.source, XREF_SOURCE_REGISTER);
      EXPECT_EQ(site.operand.source_offset, register_pt_regs_offset(*reg));
    }
  }
}

// `incomplete`: the functions expected to hold undecodable bytes.
void expect_agrees_with_objdump(const std::string& path, const std::set<std::string>& incomplete) {
  const ElfImage image = open_image(path);
  const StoreSiteTable table = find_all(image);
  const auto lines = test::objdump_intel(path);
  ASSERT_GT(table.counts.functions, 10u);
  const std::set<uint64_t> expected = objdump_stores_in(table, lines);
  const std::set<uint64_t> found = listed_stores(table);
  std::set<uint64_t> missing, extra;
  std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(), std::inserter(missing, missing.end()));
  std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(), std::inserter(extra, extra.end()));
  EXPECT_TRUE(missing.empty()) << missing.size() << " stores objdump shows were not found:" << describe(missing, lines);
  EXPECT_TRUE(extra.empty()) << extra.size() << " stores found that objdump does not show:" << describe(extra, lines);
  EXPECT_EQ(table.counts.stores, found.size());
  std::set<std::string> not_complete;
  for (const StoreFunction& function : table.functions) {
    if (!function.complete) not_complete.insert(function.name);
  }
  EXPECT_EQ(not_complete, incomplete);
  EXPECT_EQ(table.counts.undecodable == 0, incomplete.empty());
  for (const StoreSite& site : table.sites) {
    auto line = lines.find(site.va);
    if (line != lines.end()) expect_operand_as_objdump_prints(site, line->second);
    if (::testing::Test::HasFailure()) break;  // one site's story is enough
  }
}

class StoreSitesTarget : public ::testing::TestWithParam<std::string> {
 protected:
  StoreSitesTarget() : image_(open_image(target_path(GetParam()))), table_(find_all(image_)),
                       symbols_(test::nm_symbols(target_path(GetParam()))) {}

  const test::NmSymbol& symbol(const std::string& name) const {
    for (const auto& s : symbols_) {
      if (s.name == name) return s;
    }
    throw std::runtime_error("nm does not list " + name);
  }
  // The stores of one function, in VA order.
  std::vector<const StoreSite*> stores_of(const std::string& name) const {
    const test::NmSymbol& function = symbol(name);
    std::vector<const StoreSite*> stores;
    for (const StoreSite& site : table_.sites) {
      if (site.va >= function.start && site.va < function.start + function.size) stores.push_back(&site);
    }
    return stores;
  }

  ElfImage image_;
  StoreSiteTable table_;
  std::vector<test::NmSymbol> symbols_;
};

TEST_P(StoreSitesTarget, EveryStoreObjdumpShowsIsFoundAndNoOther) {
  expect_agrees_with_objdump(target_path(GetParam()), {"asm_with_data"});
}

TEST_P(StoreSitesTarget, RipRelativeGlobalsHaveTheirStaticTargetAndSource) {
  const auto total = stores_of("set_total");
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(total[0]->store_class, StoreClass::rip_static);
  EXPECT_EQ(total[0]->target_va, symbol("g_total").start);
  EXPECT_EQ(total[0]->operand.width, 8);
  EXPECT_EQ(total[0]->operand.kind, XREF_STORE_PLAIN);
  EXPECT_EQ(total[0]->operand.source, XREF_SOURCE_REGISTER);
  EXPECT_EQ(total[0]->operand.source_offset, pt_regs_offset("rdi"));
  EXPECT_FALSE(total[0]->needs_after);

  std::map<uint64_t, const StoreSite*> by_target;
  for (const StoreSite* site : stores_of("set_constants")) by_target[site->target_va] = site;
  ASSERT_EQ(by_target.size(), 3u);
  const StoreSite* all_ones = by_target.at(symbol("g_total").start);
  EXPECT_EQ(all_ones->operand.width, 8);
  EXPECT_EQ(all_ones->operand.source, XREF_SOURCE_IMMEDIATE);
  EXPECT_EQ(all_ones->operand.immediate, 0xffffffffffffffffull);
  const StoreSite* count = by_target.at(symbol("g_counts").start + 4);
  EXPECT_EQ(count->operand.width, 4);
  EXPECT_EQ(count->operand.immediate, 0x12345678u);
  const StoreSite* flag = by_target.at(symbol("g_flag").start);
  EXPECT_EQ(flag->operand.width, 1);
  EXPECT_EQ(flag->operand.immediate, 0xabu);

  std::map<uint64_t, uint8_t> widths;
  for (const StoreSite* site : stores_of("set_globals")) widths[site->target_va] = site->operand.width;
  EXPECT_EQ(widths, (std::map<uint64_t, uint8_t>{{symbol("g_flag").start, 1},
                                                 {symbol("g_short").start, 2},
                                                 {symbol("g_counts").start + 8, 4}}));
}

// Every rip-relative store's target, named by the data object holding it
// (data_symbols.h), is what objdump's comment names: "<g_counts+0x4>".
TEST_P(StoreSitesTarget, RipRelativeTargetsAreNamedAsObjdumpNamesThem) {
  const DataSymbols objects = DataSymbols::read(image_);
  const auto lines = test::objdump_intel(target_path(GetParam()));
  size_t named = 0;
  for (const StoreSite& site : table_.sites) {
    if (site.store_class != StoreClass::rip_static) continue;
    const ObjdumpIntelLine& line = lines.at(site.va);
    const size_t open = line.comment.find('<');
    ASSERT_NE(open, std::string::npos) << line.comment;
    const std::string objdump_name = line.comment.substr(open + 1, line.comment.find('>') - open - 1);
    const DataSymbol* holder = objects.containing(site.target_va);
    ASSERT_NE(holder, nullptr) << site.text;
    EXPECT_EQ(data_symbol_place(*holder, site.target_va), objdump_name) << site.text;
    ++named;
  }
  EXPECT_GE(named, 8u);
}

// Data the sweep reads as a store, in a function with undecodable bytes:
// listed, never probed, nor is the real store beside it.
TEST_P(StoreSitesTarget, StoresOfAFunctionWithDataInsideAreNeverProbed) {
  const auto stores = stores_of("asm_with_data");
  ASSERT_EQ(stores.size(), 3u);  // mov [rsi], rdi; the gap; mov [rcx], al (data)
  EXPECT_EQ(stores[0]->store_class, StoreClass::plain);
  EXPECT_EQ(stores[1]->store_class, StoreClass::undecodable);
  EXPECT_EQ(stores[1]->size, 1);
  EXPECT_EQ(stores[2]->store_class, StoreClass::plain);
  EXPECT_EQ(stores[2]->operand.base_offset, pt_regs_offset("rcx"));
  EXPECT_FALSE(table_.functions[stores[0]->function].complete);
  StoreSiteTable table = table_;
  const auto probed = prune_store_sites(table, {StaticRange{0, 64, true, true}});
  EXPECT_EQ(table.counts.incomplete, 2u);
  for (uint32_t index : probed) {
    EXPECT_TRUE(table.functions[table.sites[index].function].complete);
  }
}

// Data that decodes as stores, which no path reaches: listed, never probed;
// the real store between them is. No other store of the target is
// unreachable (the objdump test above lists every one).
TEST_P(StoreSitesTarget, StoresNoPathReachesAreNeverProbed) {
  const auto stores = stores_of("asm_data_after_ret");
  ASSERT_EQ(stores.size(), 3u);
  EXPECT_TRUE(stores[0]->unreachable) << stores[0]->text;   // jumped over
  EXPECT_FALSE(stores[1]->unreachable) << stores[1]->text;  // mov [rsi], rdi
  EXPECT_EQ(stores[1]->operand.base_offset, pt_regs_offset("rsi"));
  EXPECT_TRUE(stores[2]->unreachable) << stores[2]->text;   // after the ret
  EXPECT_EQ(table_.counts.unreachable, 2u);
  StoreSiteTable table = table_;
  const auto probed = prune_store_sites(table, {StaticRange{0, 64, true, true}});
  EXPECT_EQ(table.counts.unreached, 2u);
  const uint32_t real = static_cast<uint32_t>(stores[1] - table_.sites.data());
  EXPECT_NE(std::find(probed.begin(), probed.end(), real), probed.end());
  for (uint32_t index : probed) {
    EXPECT_FALSE(table.sites[index].unreachable);
  }
}

TEST_P(StoreSitesTarget, StructFieldsThroughAPointerAreBasePlusDisp) {
  // fill_config(c = rdi, serial = rsi, limit = edx, port = cx): the fields at 8, 4, 2, 0.
  std::map<int64_t, const StoreSite*> by_disp;
  for (const StoreSite* site : stores_of("fill_config")) by_disp[site->operand.disp] = site;
  ASSERT_EQ(by_disp.size(), 4u);
  const std::map<int64_t, std::pair<uint8_t, const char*>> expected = {
      {8, {8, "rsi"}}, {4, {4, "rdx"}}, {2, {2, "rcx"}}, {0, {1, nullptr}}};
  for (const auto& [disp, want] : expected) {
    SCOPED_TRACE(disp);
    const StoreSite* site = by_disp.at(disp);
    EXPECT_EQ(site->store_class, StoreClass::plain);
    EXPECT_EQ(site->operand.base_offset, pt_regs_offset("rdi"));
    EXPECT_EQ(site->operand.index_offset, XREF_WATCH_NO_REG);
    EXPECT_EQ(site->operand.width, want.first);
    if (want.second != nullptr) {
      EXPECT_EQ(site->operand.source, XREF_SOURCE_REGISTER);
      EXPECT_EQ(site->operand.source_offset, pt_regs_offset(want.second));
    } else {
      EXPECT_EQ(site->operand.source, XREF_SOURCE_IMMEDIATE);
      EXPECT_EQ(site->operand.immediate, 3u);
    }
  }
  // set_slot(c = rdi, i = rsi, value = rdx): c->slots[i] is [rdi + rsi*8 + 0x30].
  const auto slot = stores_of("set_slot");
  ASSERT_EQ(slot.size(), 1u);
  EXPECT_EQ(slot[0]->operand.base_offset, pt_regs_offset("rdi"));
  EXPECT_EQ(slot[0]->operand.index_offset, pt_regs_offset("rsi"));
  EXPECT_EQ(slot[0]->operand.scale, 8);
  EXPECT_EQ(slot[0]->operand.disp, 0x30);
  EXPECT_EQ(slot[0]->operand.width, 8);
  EXPECT_EQ(slot[0]->operand.source_offset, pt_regs_offset("rdx"));
}

TEST_P(StoreSitesTarget, ByteLoopStoresOneByteAtATime) {
  const auto stores = stores_of("byte_loop");
  ASSERT_FALSE(stores.empty());
  bool byte_store = false;
  for (const StoreSite* site : stores) {
    EXPECT_TRUE(site->store_class == StoreClass::plain) << site->text;
    EXPECT_NE(site->operand.base_offset, XREF_WATCH_NO_REG) << site->text;
    byte_store = byte_store || site->operand.width == 1;
  }
  EXPECT_TRUE(byte_store);  // clang may vectorise too (16-byte stores); the tail is bytes
}

TEST_P(StoreSitesTarget, AtomicsAndReadModifyWriteAreKnownOnlyAfter) {
  for (const char* name : {"atomics", "read_modify_write", "flag_less", "vector_copy"}) {
    SCOPED_TRACE(name);
    const auto stores = stores_of(name);
    ASSERT_FALSE(stores.empty());
    for (const StoreSite* site : stores) {
      SCOPED_TRACE(site->text);
      EXPECT_EQ(site->store_class, StoreClass::plain);
      EXPECT_EQ(site->operand.source, XREF_SOURCE_AFTER);
      EXPECT_TRUE(site->needs_after);
      EXPECT_TRUE(site->after_ok);  // the next instruction is plain code of the same function
    }
  }
  const auto atomics = stores_of("atomics");
  size_t locked = 0, exchanges = 0;
  for (const StoreSite* site : atomics) {
    const bool lock = site->text.rfind("lock ", 0) == 0;
    locked += lock;
    exchanges += site->text.rfind("xchg", 0) == 0;
    // The kernel takes no uprobe on a lock prefix; xchg is locked without one.
    EXPECT_EQ(site->kernel_refuses_probe, lock) << site->text;
  }
  EXPECT_GE(locked, 2u);  // cmpxchg and xadd
  EXPECT_EQ(exchanges, 1u);
  for (const StoreSite* site : stores_of("vector_copy")) EXPECT_EQ(site->operand.width, 16) << site->text;
  for (const StoreSite* site : stores_of("flag_less")) EXPECT_EQ(site->operand.width, 1) << site->text;
}

TEST_P(StoreSitesTarget, AFixedSizeMemsetIsRepStosOrVectorStores) {
  const auto stores = stores_of("clear_config");
  ASSERT_FALSE(stores.empty());
  for (const StoreSite* site : stores) {
    SCOPED_TRACE(site->text);
    if (site->store_class == StoreClass::rep_stos) {
      EXPECT_EQ(site->operand.kind, XREF_STORE_REP_STOS);
      EXPECT_EQ(site->operand.base_offset, pt_regs_offset("rdi"));
      EXPECT_EQ(site->operand.source_offset, pt_regs_offset("rax"));
      EXPECT_EQ(site->operand.width, 8);
      EXPECT_FALSE(site->needs_after);
    } else {
      EXPECT_EQ(site->store_class, StoreClass::rip_static);  // clang: movups [rip + ...], xmm0
      EXPECT_EQ(site->operand.width, 16);
      EXPECT_GE(site->target_va, symbol("g_config").start);
      EXPECT_LT(site->target_va, symbol("g_config").start + symbol("g_config").size);
    }
  }
  if (GetParam() == "gcc") {
    EXPECT_EQ(stores.size(), 1u);
  }
}

TEST_P(StoreSitesTarget, RbpStoresAreStackStoresOnlyWithAFramePointer) {
  const auto framed = stores_of("framed");
  ASSERT_GE(framed.size(), 5u);  // push rbp and the four locals
  for (const StoreSite* site : framed) EXPECT_EQ(site->store_class, StoreClass::stack) << site->text;
  // No other function of the target keeps a frame pointer: an rbp-based
  // store there would be plain. And every call is a stack store pushing
  // its static return address.
  size_t calls = 0;
  for (const StoreSite& site : table_.sites) {
    if (site.text.rfind("call", 0) != 0) continue;
    ++calls;
    EXPECT_EQ(site.store_class, StoreClass::stack);
    EXPECT_EQ(site.operand.base_offset, pt_regs_offset("rsp"));
    EXPECT_EQ(site.operand.disp, -8);
    if (site.immediate_is_static_va) {
      EXPECT_EQ(site.operand.immediate, site.va + site.size);
    }
  }
  EXPECT_GT(calls, 5u);
}

TEST_P(StoreSitesTarget, PruningKeepsWhatCanReachTheRanges) {
  const test::NmSymbol total = symbol("g_total");
  // Counted by class, leaving out what the kernel refuses (lock prefixes)
  // and asm_with_data's data.
  size_t stack = 0, rip = 0, rip_total = 0, probeable = 0, refused = 0;
  std::vector<uint32_t> refused_after_ok;
  for (uint32_t i = 0; i < table_.sites.size(); ++i) {
    const StoreSite& site = table_.sites[i];
    if (!table_.functions[site.function].complete || site.unreachable) continue;
    if (site.kernel_refuses_probe) {
      const bool reachable = site.store_class == StoreClass::plain || site.store_class == StoreClass::rep_stos ||
                             site.store_class == StoreClass::rep_movs;
      refused += reachable;
      if (reachable && site.after_ok) refused_after_ok.push_back(i);
      continue;
    }
    stack += site.store_class == StoreClass::stack;
    rip += site.store_class == StoreClass::rip_static;
    rip_total += site.store_class == StoreClass::rip_static && site.target_va < total.start + total.size &&
                 total.start < site.target_va + site.operand.width;
    probeable += site.store_class == StoreClass::plain || site.store_class == StoreClass::rep_stos ||
                 site.store_class == StoreClass::rep_movs;
  }
  ASSERT_GT(stack, 0u);
  ASSERT_GT(rip, rip_total);
  ASSERT_GE(rip_total, 2u);  // set_total, set_constants (and atomics' callers)
  ASSERT_GE(refused, 2u);    // atomics: lock cmpxchg, lock xadd (lock add)

  StoreSiteTable table = table_;
  // g_total alone: no stack store, only the rip-relative stores that hit it.
  auto probed = prune_store_sites(table, {StaticRange{total.start, total.size, false, false}});
  EXPECT_EQ(probed.size(), probeable + rip_total);
  EXPECT_EQ(table.counts.probed, probed.size());
  EXPECT_EQ(table.counts.pruned_stack, stack);
  EXPECT_EQ(table.counts.pruned_static, rip - rip_total);
  EXPECT_EQ(table.counts.refused, refused);
  EXPECT_EQ(table.after_only, refused_after_ok);
  for (uint32_t index : probed) {
    const StoreSite& site = table.sites[index];
    EXPECT_NE(site.store_class, StoreClass::stack);
    if (site.store_class == StoreClass::rip_static) {
      EXPECT_EQ(site.target_va, total.start) << site.text;
    }
  }
  // A heap range: no rip-relative store of this image can reach it.
  probed = prune_store_sites(table, {StaticRange{0, 64, false, false}});
  EXPECT_EQ(probed.size(), probeable);
  EXPECT_EQ(table.counts.pruned_static, rip);
  // A range that may move can land anywhere: every rip-relative store stays.
  probed = prune_store_sites(table, {StaticRange{0, 64, false, true}});
  EXPECT_EQ(probed.size(), probeable + rip);
  EXPECT_EQ(table.counts.pruned_static, 0u);
  // A range on a stack: the stack stores are probed.
  probed = prune_store_sites(table, {StaticRange{0, 64, true, false}});
  EXPECT_EQ(probed.size(), probeable + stack);
  EXPECT_EQ(table.counts.pruned_stack, 0u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, StoreSitesTarget, ::testing::Values("gcc", "clang"));

// libc: every store objdump shows, with its operand; the EVEX stores of its
// AVX-512 string functions counted and never probed, and no after-probe on
// an EVEX instruction, whatever the ranges.
TEST(StoreSitesLibc, EveryStoreObjdumpShowsIsFoundAndNoOther) { expect_agrees_with_objdump(kLibc, {}); }

TEST(StoreSitesLibc, EvexStoresAreCountedAndNeverProbed) {
  const ElfImage image = open_image(kLibc);
  const auto functions = image.all_functions();
  const auto started = std::chrono::steady_clock::now();
  const std::clock_t cpu_started = std::clock();
  auto found = find_store_sites(image, functions);
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_started) / CLOCKS_PER_SEC;
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(found) << found.error().message;
  StoreSiteTable& table = *found;
  const auto probed = prune_store_sites(table, {StaticRange{0, 64, true, true}});
  std::cout << "libc: " << table.counts.functions << " functions, " << table.counts.stores << " stores, "
            << probed.size() << " probeable (every class that can be), " << table.counts.refused
            << " refused by the kernel (" << table.after_only.size() << " seen after), " << table.counts.evex << " EVEX, "
            << table.counts.segment << " fs/gs, " << table.counts.unbounded << " unbounded, "
            << table.counts.undecodable << " undecodable bytes, " << table.counts.unreachable
            << " unreachable; find_store_sites took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms (" << cpu_ms
            << " ms of CPU)\n";
  EXPECT_GT(table.counts.evex, 0u);
  EXPECT_EQ(table.counts.unreachable, 0u);  // glibc keeps no data in its functions
  // glibc is built without frame pointers: rbp is a general register there,
  // and its rbp-based stores are plain, not stack stores.
  size_t rbp_plain = 0, rbp_stack = 0;
  for (const StoreSite& site : table.sites) {
    if (site.operand.base_offset != pt_regs_offset("rbp")) continue;
    rbp_plain += site.store_class == StoreClass::plain;
    rbp_stack += site.store_class == StoreClass::stack;
  }
  std::cout << "libc: rbp-based stores: " << rbp_plain << " plain, " << rbp_stack << " stack\n";
  EXPECT_GT(rbp_plain, 100u);
  size_t evex_by_bytes = 0;
  for (const StoreSite& site : table.sites) {
    if (site.store_class == StoreClass::undecodable) continue;
    const bool evex = evex_bytes(image, site.va);
    evex_by_bytes += evex;
    EXPECT_EQ(evex, site.store_class == StoreClass::evex) << to_hex(site.va) << " " << site.text;
  }
  EXPECT_EQ(evex_by_bytes, table.counts.evex);
  for (uint32_t index : probed) {
    const StoreSite& site = table.sites[index];
    ASSERT_FALSE(evex_bytes(image, site.va)) << to_hex(site.va) << " " << site.text;
    ASSERT_FALSE(refused_prefix(image, site.va)) << to_hex(site.va) << " " << site.text;
    if (site.needs_after && site.after_ok) {
      ASSERT_FALSE(evex_bytes(image, site.va + site.size)) << "after-probe on EVEX after " << to_hex(site.va);
      ASSERT_FALSE(refused_prefix(image, site.va + site.size)) << "after-probe refused after " << to_hex(site.va);
    }
  }
  EXPECT_EQ(table.counts.probed, probed.size());
  // libc's atomics are lock-prefixed: counted as refused, not probed.
  EXPECT_GT(table.counts.refused, 100u);
  for (uint32_t index : table.after_only) {
    const StoreSite& site = table.sites[index];
    EXPECT_TRUE(refused_prefix(image, site.va)) << to_hex(site.va) << " " << site.text;
    EXPECT_FALSE(refused_prefix(image, site.va + site.size) || evex_bytes(image, site.va + site.size));
  }
}

}  // namespace
}  // namespace xref
