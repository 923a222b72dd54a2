#include "disassembly.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "elf_image.h"
#include "hex.h"
#include "objdump_listing.h"

namespace xref {
namespace {

using test::fixture_path;
using test::NmSymbol;
using test::ObjdumpInstruction;
using test::ObjdumpListing;

// ---------------------------------------------------------------------------
// Hand-assembled bytes: shapes the fixture cannot produce reliably.

FunctionCode sweep(std::vector<uint8_t> bytes, uint64_t start = 0x1000) {
  auto code = disassemble_function(bytes, start);
  if (!code) throw std::runtime_error(code.error().message);
  return std::move(code).value();
}

std::vector<uint64_t> starts(const FunctionCode& code) {
  std::vector<uint64_t> addresses;
  for (const auto& instruction : code.instructions) addresses.push_back(instruction.address);
  return addresses;
}

TEST(DisassembleBytes, EntryNopAfterEndbr64) {
  // endbr64; nopl 0x0(%rax,%rax,1); ret
  const auto code = sweep({0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3});
  EXPECT_TRUE(code.entry_endbr64);
  ASSERT_TRUE(code.entry_nop_va.has_value());
  EXPECT_EQ(*code.entry_nop_va, 0x1004u);
  EXPECT_EQ(starts(code), (std::vector<uint64_t>{0x1000, 0x1004, 0x1009}));
  EXPECT_EQ(code.instructions[0].kind, InstructionKind::endbr64);
  EXPECT_EQ(code.instructions[1].kind, InstructionKind::nop);
  EXPECT_EQ(code.rets, std::vector<uint64_t>{0x1009});
  EXPECT_TRUE(code.complete());
}

TEST(DisassembleBytes, EntryNopAtStartAndLookalikes) {
  const auto plain = sweep({0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3});
  EXPECT_FALSE(plain.entry_endbr64);
  ASSERT_TRUE(plain.entry_nop_va.has_value());
  EXPECT_EQ(*plain.entry_nop_va, 0x1000u);

  // A 6-byte nop (66 prefix) and a 4-byte nop plus a 1-byte nop are not the
  // 5-byte nop the kernel optimizes.
  EXPECT_FALSE(sweep({0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}).entry_nop_va.has_value());
  EXPECT_FALSE(sweep({0x0f, 0x1f, 0x40, 0x00, 0x90, 0xc3}).entry_nop_va.has_value());
  // A nop5 after some other first instruction is not at the entry.
  EXPECT_FALSE(sweep({0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}).entry_nop_va.has_value());
  // endbr64 then something else: endbr64 seen, no entry nop.
  const auto endbr_only = sweep({0xf3, 0x0f, 0x1e, 0xfa, 0x90, 0xc3});
  EXPECT_TRUE(endbr_only.entry_endbr64);
  EXPECT_FALSE(endbr_only.entry_nop_va.has_value());
}

TEST(DisassembleBytes, UndecodableBytesAreGapsNotInstructions) {
  // ret; two bytes invalid in 64-bit mode (06 = push es); ret
  const auto code = sweep({0xc3, 0x06, 0x06, 0xc3});
  ASSERT_EQ(code.decode_gaps.size(), 1u);
  EXPECT_EQ(code.decode_gaps[0].va, 0x1001u);
  EXPECT_EQ(code.decode_gaps[0].size, 2u);
  EXPECT_EQ(starts(code), (std::vector<uint64_t>{0x1000, 0x1003}));
  EXPECT_FALSE(is_instruction_start(code, 0x1001));
  EXPECT_FALSE(is_instruction_start(code, 0x1002));
  EXPECT_EQ(instruction_containing(code, 0x1002), nullptr);
  EXPECT_FALSE(code.complete());
  auto check = check_instruction_start(code, 0x1002);
  ASSERT_FALSE(check);
  EXPECT_EQ(check.error().code, ErrorCode::not_an_instruction);
  EXPECT_NE(check.error().message.find("undecodable"), std::string::npos) << check.error().message;
}

TEST(DisassembleBytes, AvxFiveTwelveDecodesWhereCapstoneCannot) {
  // The start of glibc 2.36's __strlen_evex: mov %edi,%eax; vpxorq
  // %xmm16,%xmm16,%xmm16; vpcmpeqb (%rdi),%ymm16,%k0; kmovd %k0,%eax; ret.
  const std::vector<uint8_t> bytes = {0x89, 0xf8, 0x62, 0xa1, 0xfd, 0x00, 0xef, 0xc0, 0x62, 0xf3, 0x7d,
                                      0x20, 0x3f, 0x07, 0x00, 0xc5, 0xfb, 0x93, 0xc0, 0xc3};
  const CapstoneDecoder capstone;
  EXPECT_FALSE(capstone.decode(std::span(bytes).subspan(8), 0x1008).has_value());  // why Zydis is needed
  EXPECT_FALSE(capstone.decode(std::span(bytes).subspan(15), 0x100f).has_value());
  const auto code = sweep(bytes);
  EXPECT_TRUE(code.complete());
  EXPECT_EQ(starts(code), (std::vector<uint64_t>{0x1000, 0x1002, 0x1008, 0x100f, 0x1013}));
  EXPECT_EQ(code.rets, (std::vector<uint64_t>{0x1013}));
  EXPECT_EQ(instruction_at(code, 0x1008)->text.rfind("vpcmpb k0, ymm16", 0), 0u) << instruction_at(code, 0x1008)->text;
  EXPECT_EQ(instruction_at(code, 0x100f)->text, "kmovd eax, k0");
}

TEST(DisassembleBytes, LoopIsAConditionalJump) {
  // Capstone 4 leaves loop out of its jump group: a loop out of the range is an exit.
  const auto code = sweep({0x90, 0xe2, 0x10, 0xc3});
  ASSERT_EQ(code.exits.size(), 1u);
  EXPECT_EQ(code.exits[0].va, 0x1001u);
  EXPECT_TRUE(code.exits[0].conditional);
  EXPECT_EQ(code.exits[0].target.va, 0x1013u);
}

TEST(DisassembleBytes, TruncatedCallIsNeverACallSite) {
  // push %rbp; then a call cut off after two of its five bytes
  const auto code = sweep({0x55, 0xe8, 0x10});
  EXPECT_TRUE(code.calls.empty());
  EXPECT_FALSE(is_instruction_start(code, 0x1001));
  ASSERT_FALSE(code.decode_gaps.empty());
  EXPECT_EQ(code.decode_gaps[0].va, 0x1001u);
  EXPECT_FALSE(code.complete());
}

TEST(DisassembleBytes, RetShapesAndTraps) {
  // ret; repz ret; bnd ret; ret $8; lret; ud2; hlt; int3
  const auto code = sweep({0xc3, 0xf3, 0xc3, 0xf2, 0xc3, 0xc2, 0x08, 0x00, 0xcb, 0x0f, 0x0b, 0xf4, 0xcc});
  EXPECT_EQ(code.rets, (std::vector<uint64_t>{0x1000, 0x1001, 0x1003, 0x1005, 0x1008}));
  EXPECT_EQ(code.traps, (std::vector<uint64_t>{0x1009, 0x100b, 0x100c}));
  EXPECT_TRUE(code.complete());
}

TEST(DisassembleBytes, CallOperandKinds) {
  const auto code = sweep({
      0xe8, 0xfb, 0x0f, 0x00, 0x00,              // 0x1000 call 0x2000
      0xff, 0xd0,                                // 0x1005 call *%rax
      0xff, 0x15, 0x10, 0x00, 0x00, 0x00,        // 0x1007 call *0x10(%rip) -> slot 0x101d
      0x41, 0xff, 0x14, 0xc4,                    // 0x100d call *(%r12,%rax,8)
      0xc3,                                      // 0x1011 ret
  });
  ASSERT_EQ(code.calls.size(), 4u);
  EXPECT_EQ(code.calls[0].target.kind, OperandKind::direct);
  EXPECT_EQ(code.calls[0].target.va, 0x2000u);
  EXPECT_EQ(code.calls[0].return_va, 0x1005u);
  EXPECT_EQ(code.calls[1].target.kind, OperandKind::register_);
  EXPECT_EQ(code.calls[1].target.operand, "rax");
  EXPECT_EQ(code.calls[2].target.kind, OperandKind::rip_memory);
  EXPECT_EQ(code.calls[2].target.va, 0x101du);
  EXPECT_EQ(code.calls[3].target.kind, OperandKind::memory);
  EXPECT_TRUE(code.calls[3].target.indirect());
  EXPECT_EQ(code.calls[3].return_va, 0x1011u);
  for (const auto& call : code.calls) EXPECT_TRUE(call.return_in_function);
}

TEST(DisassembleBytes, JumpsLeavingTheFunction) {
  const auto code = sweep({
      0x74, 0x02,                                // 0x1000 je 0x1004 (inside)
      0xff, 0xe0,                                // 0x1002 jmp *%rax
      0x0f, 0x84, 0xf6, 0x0f, 0x00, 0x00,        // 0x1004 je 0x2000 (outside)
      0xe9, 0xf1, 0x0f, 0x00, 0x00,              // 0x100a jmp 0x2000 (outside)
      0xeb, 0xef,                                // 0x100f jmp 0x1000 (inside)
      0xe8, 0xe4, 0xff, 0xff, 0xff,              // 0x1011 call 0xffa (outside, noreturn shape: last)
  });
  ASSERT_EQ(code.exits.size(), 3u);
  EXPECT_EQ(code.exits[0].va, 0x1002u);
  EXPECT_EQ(code.exits[0].kind, ExitKind::indirect);
  EXPECT_EQ(code.exits[1].va, 0x1004u);
  EXPECT_TRUE(code.exits[1].conditional);
  EXPECT_EQ(code.exits[1].kind, ExitKind::candidate_tail);
  EXPECT_EQ(code.exits[1].target.va, 0x2000u);
  EXPECT_EQ(code.exits[2].va, 0x100au);
  EXPECT_FALSE(code.exits[2].conditional);
  EXPECT_EQ(code.exits[2].kind, ExitKind::candidate_tail);
  ASSERT_EQ(code.calls.size(), 1u);
  EXPECT_EQ(code.calls[0].return_va, 0x1016u);
  EXPECT_FALSE(code.calls[0].return_in_function);
  EXPECT_TRUE(code.complete());
}

TEST(DisassembleBytes, BranchIntoTheMiddleOfAnInstructionIsReported) {
  // jmp 0x1003 lands inside the 5-byte mov at 0x1002.
  const auto code = sweep({0xeb, 0x01, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3});
  EXPECT_EQ(code.misaligned_branch_targets, std::vector<uint64_t>{0x1003});
  EXPECT_FALSE(code.complete());
}

TEST(DisassembleBytes, ContainingInstructionAndItsMessage) {
  // mov %rdi,%rax; call 0x1400; ret
  const auto code = sweep({0x48, 0x89, 0xf8, 0xe8, 0xc8, 0x01, 0x00, 0x00, 0xc3}, 0x1230);
  for (uint64_t va = 0x1233; va < 0x1238; ++va) {
    const Instruction* containing = instruction_containing(code, va);
    ASSERT_NE(containing, nullptr);
    EXPECT_EQ(containing->address, 0x1233u);
  }
  auto inside = check_instruction_start(code, 0x1235);
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().code, ErrorCode::not_an_instruction);
  EXPECT_EQ(inside.error().message, "0x1235 is inside the 5-byte instruction at 0x1233 (call 0x1400)");
  EXPECT_NE(inside.error().hint.find("0x1238"), std::string::npos);
  auto at = check_instruction_start(code, 0x1233);
  ASSERT_TRUE(at);
  EXPECT_EQ((*at)->kind, InstructionKind::call);
  auto outside = check_instruction_start(code, 0x1239);
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(instruction_containing(code, 0x1239), nullptr);
  EXPECT_EQ(instruction_containing(code, 0x122f), nullptr);
}

TEST(DisassembleBytes, EmptyRangeIsAnError) {
  auto empty = disassemble_function({}, 0x1000);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::invalid_argument);
}

// ---------------------------------------------------------------------------
// The fixture, checked against objdump and nm.

// What objdump says about one function, and how the disassembly was made.
struct Expectation {
  std::string function;          // for messages and for "<name>.cold"
  bool classified = true;        // made by disassemble(ElfImage): exits classified, targets named
  bool names_from_objdump = true;  // objdump printed symbol names (the image is not stripped)
};

ExitKind expected_exit_kind(const ObjdumpInstruction& jump, const Expectation& expectation) {
  if (jump.indirect()) return ExitKind::indirect;
  if (!expectation.classified) return ExitKind::candidate_tail;
  const std::string symbol = jump.target_symbol();
  if (symbol.find('+') != std::string::npos) return ExitKind::outside_jump;
  if (symbol.rfind(expectation.function + ".cold", 0) == 0) return ExitKind::cold_part;
  return ExitKind::tail_call;
}

void expect_branch_target(const BranchTarget& actual, const ObjdumpInstruction& line, const Expectation& expectation) {
  if (!line.indirect()) {
    EXPECT_EQ(actual.kind, OperandKind::direct);
    EXPECT_EQ(actual.va, line.direct_target());
    const std::string symbol = line.target_symbol();
    if (expectation.classified && expectation.names_from_objdump && symbol.find('+') == std::string::npos) {
      EXPECT_EQ(actual.name, symbol);
    }
    return;
  }
  if (line.operands.find("(%rip)") != std::string::npos) {
    EXPECT_EQ(actual.kind, OperandKind::rip_memory);
    ASSERT_TRUE(line.comment_address().has_value());
    EXPECT_EQ(actual.va, *line.comment_address());
  } else if (line.operands.find('(') != std::string::npos) {
    EXPECT_EQ(actual.kind, OperandKind::memory);
  } else {
    EXPECT_EQ(actual.kind, OperandKind::register_);
    EXPECT_EQ("%" + actual.operand, line.operands.substr(1));
  }
}

// Instruction boundaries for every byte, call sites with return sites,
// rets, traps and exits must equal objdump's listing of [start, end).
void expect_matches_objdump(const FunctionCode& code, const ObjdumpListing& listing, const Expectation& expectation) {
  SCOPED_TRACE(expectation.function + " at " + to_hex(code.start));
  const auto lines = listing.in_range(code.start, code.end);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(code.complete());

  std::set<uint64_t> objdump_starts;
  for (const auto& line : lines) objdump_starts.insert(line.address);
  uint64_t current = 0;
  for (uint64_t va = code.start; va < code.end; ++va) {
    const bool objdump_start = objdump_starts.count(va) != 0;
    if (objdump_start) current = va;
    ASSERT_EQ(is_instruction_start(code, va), objdump_start) << "at " << to_hex(va);
    const Instruction* containing = instruction_containing(code, va);
    ASSERT_NE(containing, nullptr) << "at " << to_hex(va);
    EXPECT_EQ(containing->address, current) << "at " << to_hex(va);
  }

  std::vector<const ObjdumpInstruction*> calls, exits;
  std::vector<uint64_t> rets, traps;
  for (const auto& line : lines) {
    if (line.is_call()) calls.push_back(&line);
    if (line.is_ret()) rets.push_back(line.address);
    if (line.is_trap()) traps.push_back(line.address);
    if (line.is_jump() || line.is_conditional_jump()) {
      if (line.indirect() || line.direct_target() < code.start || line.direct_target() >= code.end) {
        exits.push_back(&line);
      }
    }
  }
  EXPECT_EQ(code.rets, rets);
  EXPECT_EQ(code.traps, traps);

  ASSERT_EQ(code.calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE("call at " + to_hex(calls[i]->address));
    EXPECT_EQ(code.calls[i].va, calls[i]->address);
    EXPECT_EQ(code.calls[i].return_va, calls[i]->next);
    EXPECT_EQ(code.calls[i].return_in_function, calls[i]->next < code.end);
    expect_branch_target(code.calls[i].target, *calls[i], expectation);
  }

  ASSERT_EQ(code.exits.size(), exits.size());
  for (size_t i = 0; i < exits.size(); ++i) {
    SCOPED_TRACE("jump at " + to_hex(exits[i]->address));
    EXPECT_EQ(code.exits[i].va, exits[i]->address);
    EXPECT_EQ(code.exits[i].conditional, exits[i]->is_conditional_jump());
    EXPECT_EQ(code.exits[i].kind, expected_exit_kind(*exits[i], expectation));
    expect_branch_target(code.exits[i].target, *exits[i], expectation);
  }
}

std::vector<NmSymbol> sized_text_symbols(const std::string& path) {
  std::vector<NmSymbol> symbols;
  for (const auto& symbol : test::nm_symbols(path)) {
    if (symbol.is_text() && symbol.size > 0) symbols.push_back(symbol);
  }
  return symbols;
}

class FixtureDisassembly : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = fixture_path(GetParam());
    auto image = ElfImage::open(path_);
    ASSERT_TRUE(image) << image.error().message;
    image_.emplace(std::move(image).value());
    listing_.emplace(path_);
    symbols_ = test::nm_symbols(path_);
  }

  const FunctionSymbol& function(const std::string& name) const {
    const FunctionSymbol* found = image_->function_at(test::nm_symbol(symbols_, name).start);
    if (found == nullptr || found->name != name) throw std::runtime_error("ElfImage lacks " + name);
    return *found;
  }

  FunctionCode code_of(const std::string& name) const {
    auto code = disassemble(*image_, function(name));
    if (!code) throw std::runtime_error(code.error().message);
    return std::move(code).value();
  }

  std::string path_;
  std::optional<ElfImage> image_;
  std::optional<ObjdumpListing> listing_;
  std::vector<NmSymbol> symbols_;
};

// Guards the fixture itself: the code shapes the other tests rely on must
// really be in the binary, as objdump shows it.
TEST_P(FixtureDisassembly, FixtureHasTheIntendedShapes) {
  auto lines_of = [&](const std::string& name) {
    const NmSymbol symbol = test::nm_symbol(symbols_, name);
    return listing_->in_range(symbol.start, symbol.start + symbol.size);
  };
  auto count = [&](const std::string& name, auto predicate) {
    size_t n = 0;
    for (const auto& line : lines_of(name)) n += predicate(line) ? 1 : 0;
    return n;
  };
  auto calls_to = [&](const std::string& name, const std::string& target) {
    return count(name, [&](const ObjdumpInstruction& l) { return l.is_call() && l.target_symbol() == target; });
  };
  EXPECT_EQ(calls_to("chain_a", "chain_b"), 1u);
  EXPECT_EQ(calls_to("chain_b", "chain_c"), 1u);
  EXPECT_EQ(count("tail_caller", [](const auto& l) { return l.is_jump() && l.target_symbol() == "tail_target"; }), 1u);
  EXPECT_EQ(count("tail_caller", [](const auto& l) { return l.is_call(); }), 0u);
  EXPECT_EQ(count("indirect_caller", [](const auto& l) { return l.is_call() && l.operands == "*%rax"; }), 1u);
  EXPECT_EQ(count("memory_indirect_caller",
                  [](const auto& l) { return l.is_call() && l.operands.find("(%rip)") != std::string::npos; }),
            1u);
  EXPECT_EQ(calls_to("recurse", "recurse"), 1u);
  EXPECT_EQ(calls_to("ping", "pong"), 1u);
  EXPECT_EQ(calls_to("pong", "ping"), 1u);
  EXPECT_EQ(calls_to("say", "puts@plt"), 1u);
  EXPECT_GE(count("classify", [](const auto& l) { return l.is_ret(); }), 3u);
  EXPECT_EQ(count("dispatch", [](const auto& l) { return l.is_jump() && l.indirect(); }), 1u);
  EXPECT_EQ(count("cold_split", [](const auto& l) { return l.target_symbol() == "cold_split.cold"; }), 1u);
  EXPECT_EQ(count("tree_root", [](const auto& l) { return l.is_jump() && l.target_symbol() == "tail_caller"; }), 1u);

  std::set<uint64_t> lengths;
  const auto mixed = lines_of("mixed_lengths");
  for (size_t i = 0; i + 1 < mixed.size(); ++i) lengths.insert(mixed[i].next - mixed[i].address);
  EXPECT_GE(lengths.size(), 5u);
  EXPECT_EQ(lengths.count(10), 1u) << "the movabs";
}

TEST_P(FixtureDisassembly, EverySizedFunctionMatchesObjdump) {
  const auto symbols = sized_text_symbols(path_);
  ASSERT_GE(symbols.size(), 20u);
  for (const auto& symbol : symbols) {
    const FunctionSymbol* function = image_->function_at(symbol.start);
    ASSERT_NE(function, nullptr) << symbol.name;
    auto code = disassemble(*image_, *function);
    ASSERT_TRUE(code) << code.error().message;
    EXPECT_EQ(code->end, symbol.start + symbol.size);
    EXPECT_FALSE(code->end_inferred);
    expect_matches_objdump(*code, *listing_, Expectation{symbol.name});
  }
}

TEST_P(FixtureDisassembly, RawBytesMatchObjdumpWithoutClassification) {
  for (const auto& symbol : sized_text_symbols(path_)) {
    const auto bytes = image_->bytes_at(symbol.start, symbol.size);
    ASSERT_TRUE(bytes.has_value()) << symbol.name;
    auto code = disassemble_function(*bytes, symbol.start);
    ASSERT_TRUE(code) << code.error().message;
    expect_matches_objdump(*code, *listing_, Expectation{symbol.name, false, true});
  }
}

TEST_P(FixtureDisassembly, SizelessSymbolsAreBoundedByTheNextFunctionOrSection) {
  const auto all = test::nm_symbols(path_);
  std::vector<NmSymbol> text;
  for (const auto& symbol : all) {
    if (symbol.is_text()) text.push_back(symbol);
  }
  std::sort(text.begin(), text.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  // Executable sections from readelf: "[Nr] Name Type Address Off Size ..."
  std::vector<std::pair<uint64_t, uint64_t>> executable;
  for (const auto& line : test::command_lines("readelf -SW " + path_)) {
    const size_t bracket = line.find(']');
    if (bracket == std::string::npos || line.find(" AX ") == std::string::npos) continue;
    std::istringstream fields(line.substr(bracket + 1));
    std::string name, type, address, offset, size;
    fields >> name >> type >> address >> offset >> size;
    executable.emplace_back(std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16));
  }
  ASSERT_FALSE(executable.empty());

  size_t checked = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i].size != 0) continue;
    const FunctionSymbol* function = image_->function_at(text[i].start);
    if (function == nullptr || function->size != 0) continue;  // an alias that has a size
    SCOPED_TRACE(text[i].name);
    // The expected end: the next function start (nm's text symbols and
    // objdump's PLT stubs) or the section end, whichever comes first.
    uint64_t end = UINT64_MAX;
    for (const auto& [address, size] : executable) {
      if (text[i].start >= address && text[i].start < address + size) end = address + size;
    }
    for (size_t j = i + 1; j < text.size(); ++j) {
      if (text[j].start > text[i].start) {
        end = std::min(end, text[j].start);
        break;
      }
    }
    for (const auto& stub : {"puts@plt", "printf@plt", "abort@plt"}) {
      const auto address = listing_->symbol(stub);
      ASSERT_TRUE(address.has_value()) << stub;
      if (*address > text[i].start) end = std::min(end, *address);
    }
    auto code = disassemble(*image_, *function);
    ASSERT_TRUE(code) << code.error().message;
    EXPECT_TRUE(code->end_inferred);
    EXPECT_EQ(code->end, end);
    expect_matches_objdump(*code, *listing_, Expectation{text[i].name});
    ++checked;
  }
  EXPECT_GE(checked, 3u) << "_init, _fini and the crt helpers have no size";
}

TEST_P(FixtureDisassembly, IndirectCallsAreFlagged) {
  const auto through_register = code_of("indirect_caller");
  ASSERT_EQ(through_register.calls.size(), 1u);
  EXPECT_TRUE(through_register.calls[0].target.indirect());
  EXPECT_EQ(through_register.calls[0].target.kind, OperandKind::register_);
  EXPECT_EQ(through_register.calls[0].target.operand, "rax");

  const auto through_memory = code_of("memory_indirect_caller");
  ASSERT_EQ(through_memory.calls.size(), 1u);
  EXPECT_TRUE(through_memory.calls[0].target.indirect());
  EXPECT_EQ(through_memory.calls[0].target.kind, OperandKind::rip_memory);
  EXPECT_EQ(through_memory.calls[0].target.va, test::nm_symbol(symbols_, "memory_fp").start);
}

TEST_P(FixtureDisassembly, PltCallTargetIsNamed) {
  const auto code = code_of("say");
  ASSERT_EQ(code.calls.size(), 1u);
  EXPECT_EQ(code.calls[0].target.name, "puts@plt");
  EXPECT_EQ(code.calls[0].target.va, *listing_->symbol("puts@plt"));
  const FunctionSymbol* stub = image_->function_at(code.calls[0].target.va);
  ASSERT_NE(stub, nullptr);
  EXPECT_EQ(stub->source, SymbolSource::plt);
}

TEST_P(FixtureDisassembly, TailCallsAndColdParts) {
  const auto tail = code_of("tail_caller");
  ASSERT_EQ(tail.exits.size(), 1u);
  EXPECT_EQ(tail.exits[0].kind, ExitKind::tail_call);
  EXPECT_EQ(tail.exits[0].target.name, "tail_target");
  EXPECT_TRUE(tail.rets.empty());

  const auto table = code_of("dispatch");
  size_t tails = 0, indirect = 0;
  for (const auto& exit : table.exits) {
    tails += exit.kind == ExitKind::tail_call ? 1 : 0;
    indirect += exit.kind == ExitKind::indirect ? 1 : 0;
  }
  EXPECT_EQ(tails, 8u);
  EXPECT_EQ(indirect, 1u);

  const auto cold = code_of("cold_split");
  ASSERT_EQ(cold.exits.size(), 1u);
  EXPECT_EQ(cold.exits[0].kind, ExitKind::cold_part);
  EXPECT_TRUE(cold.exits[0].conditional);
  const auto cold_part = code_of("cold_split.cold");
  ASSERT_EQ(cold_part.calls.size(), 1u);
  EXPECT_EQ(cold_part.calls[0].target.name, "abort@plt");
  EXPECT_FALSE(cold_part.calls[0].return_in_function);

  const auto unnamed = code_of("asm_unnamed_calls");
  ASSERT_EQ(unnamed.exits.size(), 1u);
  EXPECT_EQ(unnamed.exits[0].kind, ExitKind::outside_jump);
  EXPECT_TRUE(unnamed.exits[0].target.name.empty());
}

TEST_P(FixtureDisassembly, EntryNopOnlyWhereTheBytesAreThere) {
  const auto code = code_of("entry_nop_func");
  EXPECT_TRUE(code.entry_endbr64);
  ASSERT_TRUE(code.entry_nop_va.has_value());
  EXPECT_EQ(*code.entry_nop_va, code.start + 4);
  for (const auto& name : {"leaf_add", "chain_b", "main", "tree_root"}) {
    const auto other = code_of(name);
    EXPECT_FALSE(other.entry_nop_va.has_value()) << name;
  }
}

TEST_P(FixtureDisassembly, InsideACallInstructionIsAnErrorThatNamesIt) {
  const auto code = code_of("chain_b");
  ASSERT_EQ(code.calls.size(), 1u);
  const CallSite& call = code.calls[0];
  for (uint64_t va = call.va + 1; va < call.return_va; ++va) {
    auto check = check_instruction_start(code, va);
    ASSERT_FALSE(check);
    EXPECT_EQ(check.error().code, ErrorCode::not_an_instruction);
    EXPECT_EQ(check.error().message, to_hex(va) + " is inside the 5-byte instruction at " + to_hex(call.va) +
                                         " (call " + to_hex(call.target.va) + ")");
  }
  EXPECT_TRUE(check_instruction_start(code, call.va));
  EXPECT_TRUE(check_instruction_start(code, call.return_va));
}

INSTANTIATE_TEST_SUITE_P(Variants, FixtureDisassembly, ::testing::Values("calls_pie", "calls_nopie"));

// ---------------------------------------------------------------------------
// Stripped images: the same bytes at the same addresses, found through
// .eh_frame FDE ranges instead of symbols.

class StrippedDisassembly : public ::testing::TestWithParam<std::string> {};

TEST_P(StrippedDisassembly, RawSweepMatchesObjdumpOfTheStrippedFile) {
  const std::string twin = fixture_path(GetParam());
  const std::string stripped = twin + "_stripped";
  auto image = ElfImage::open(stripped);
  ASSERT_TRUE(image) << image.error().message;
  EXPECT_FALSE(image->has_symtab());
  const ObjdumpListing listing(stripped);
  // Ranges from the symbolized twin; bytes and objdump's sweep from the stripped file.
  for (const auto& symbol : sized_text_symbols(twin)) {
    const auto bytes = image->bytes_at(symbol.start, symbol.size);
    ASSERT_TRUE(bytes.has_value()) << symbol.name;
    auto code = disassemble_function(*bytes, symbol.start);
    ASSERT_TRUE(code) << code.error().message;
    expect_matches_objdump(*code, listing, Expectation{symbol.name, false, false});
  }
}

TEST_P(StrippedDisassembly, FdeRangesGiveTheSameAnswersAsSymbols) {
  const std::string twin_path = fixture_path(GetParam());
  auto twin = ElfImage::open(twin_path);
  auto stripped = ElfImage::open(twin_path + "_stripped");
  ASSERT_TRUE(twin && stripped);
  size_t fde_ranges = 0;
  for (const FunctionSymbol* function : stripped->all_functions()) fde_ranges += function->is_fde_range() ? 1 : 0;
  if (fde_ranges == 0) GTEST_SKIP() << "ElfImage lists no .eh_frame FDE ranges for stripped images yet";

  for (const auto& symbol : sized_text_symbols(twin_path)) {
    SCOPED_TRACE(symbol.name);
    const FunctionSymbol* fde = stripped->function_at(symbol.start);
    ASSERT_NE(fde, nullptr);
    EXPECT_EQ(fde->source, SymbolSource::eh_frame_fde);
    EXPECT_EQ(fde->size, symbol.size);
    auto from_fde = disassemble(*stripped, *fde);
    auto from_symbol = disassemble(*twin, *twin->function_at(symbol.start));
    ASSERT_TRUE(from_fde && from_symbol);
    EXPECT_EQ(starts(*from_fde), starts(*from_symbol));
    EXPECT_EQ(from_fde->rets, from_symbol->rets);
    EXPECT_EQ(from_fde->traps, from_symbol->traps);
    ASSERT_EQ(from_fde->calls.size(), from_symbol->calls.size());
    for (size_t i = 0; i < from_fde->calls.size(); ++i) {
      EXPECT_EQ(from_fde->calls[i].va, from_symbol->calls[i].va);
      EXPECT_EQ(from_fde->calls[i].return_va, from_symbol->calls[i].return_va);
      EXPECT_EQ(from_fde->calls[i].target.kind, from_symbol->calls[i].target.kind);
      EXPECT_EQ(from_fde->calls[i].target.va, from_symbol->calls[i].target.va);
    }
    ASSERT_EQ(from_fde->exits.size(), from_symbol->exits.size());
    for (size_t i = 0; i < from_fde->exits.size(); ++i) {
      EXPECT_EQ(from_fde->exits[i].va, from_symbol->exits[i].va);
      EXPECT_EQ(from_fde->exits[i].target.va, from_symbol->exits[i].target.va);
      // Without names a .cold part is just another FDE range: a tail call.
      const ExitKind expected = from_symbol->exits[i].kind == ExitKind::cold_part ? ExitKind::tail_call
                                                                                   : from_symbol->exits[i].kind;
      EXPECT_EQ(from_fde->exits[i].kind, expected);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, StrippedDisassembly, ::testing::Values("calls_pie", "calls_nopie"));

}  // namespace
}  // namespace xref
