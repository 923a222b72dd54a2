#include "cfi_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "elf_image.h"
#include "hex.h"

namespace xref {

namespace {

constexpr int kRegisterRbp = 6;
constexpr int kRegisterRsp = 7;
constexpr int kRegisterRa = 16;  // the return-address column of every x86-64 CIE (rip)
constexpr uint64_t kMostPcOffset = std::numeric_limits<uint32_t>::max();
// libdw runs an FDE's instructions from its start for every row, so a
// module costs about the sum over FDEs of rows x instruction bytes: 2e7 for
// the xref binary (1.5 KB the longest FDE). A hostile FDE of a million
// one-byte rows would cost 1e12; past this bound the module is refused.
constexpr uint64_t kMostInstructionWork = uint64_t{1} << 30;

// libelf and libdw handles, each released by its own call; declared in
// this order (elf, dwarf, cfi), they are released in the reverse.
struct ElfEnd {
  void operator()(Elf* elf) const { elf_end(elf); }
};
struct DwarfEnd {
  void operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }
};
struct CfiEnd {  // dwarf_getcfi_elf's only: dwarf_getcfi's belongs to its Dwarf
  void operator()(Dwarf_CFI* cfi) const { dwarf_cfi_end(cfi); }
};

Error damaged_cfi(std::string message) {
  return make_error(ErrorCode::elf_error, std::move(message),
                    "the file's unwind tables are damaged; profile it with --callers fp");
}

// A module past one of the bounds: its frames can still be walked by frame pointers.
Error over_limit(std::string message) {
  return make_error(ErrorCode::limit_exceeded, std::move(message), "profile this module with --callers fp");
}

// Every FDE makes a row at least.
Error too_many_fdes(const std::string& path) {
  return over_limit(path + ": more than " + std::to_string(kMostCfiRows) + " FDEs");
}

std::string libdw_error() {
  const char* message = dwarf_errmsg(-1);
  return message != nullptr ? message : "unknown libdw error";
}

// ---------------------------------------------------------------------------
// DWARF expressions libdw hands back, matched against the few shapes the
// BPF unwinder follows.

// DW_OP_bregN / DW_OP_bregx of register `reg`: its offset.
std::optional<int64_t> breg_offset(const Dwarf_Op& op, int reg) {
  if (op.atom == DW_OP_breg0 + reg) return static_cast<int64_t>(op.number);
  if (op.atom == DW_OP_bregx && op.number == static_cast<Dwarf_Word>(reg)) return static_cast<int64_t>(op.number2);
  return std::nullopt;
}

std::optional<uint64_t> literal(const Dwarf_Op& op) {
  if (op.atom >= DW_OP_lit0 && op.atom <= DW_OP_lit31) return op.atom - DW_OP_lit0;
  if (op.atom == DW_OP_const1u || op.atom == DW_OP_constu) return op.number;
  return std::nullopt;
}

bool literal_is(const Dwarf_Op& op, uint64_t value) { return literal(op) == value; }

template <typename T>
bool fits(int64_t value) {
  return value >= std::numeric_limits<T>::min() && value <= std::numeric_limits<T>::max();
}

// The CFA of a lazy-binding PLT entry (binutils' ld, every x86-64 .plt):
// rsp + A, plus 8 once the entry has pushed its relocation index, i.e. when
// (rip & 15) >= N. Returns {A, N}.
std::optional<std::pair<int64_t, uint64_t>> plt_expression(std::span<const Dwarf_Op> ops) {
  if (ops.size() != 9) return std::nullopt;
  const auto base = breg_offset(ops[0], kRegisterRsp);
  const auto threshold = literal(ops[4]);
  if (!base || breg_offset(ops[1], kRegisterRa) != 0 || !literal_is(ops[2], 15) || ops[3].atom != DW_OP_and ||
      !threshold || ops[5].atom != DW_OP_ge || !literal_is(ops[6], 3) || ops[7].atom != DW_OP_shl ||
      ops[8].atom != DW_OP_plus) {
    return std::nullopt;
  }
  return std::pair{*base, *threshold};
}

// A register rule as libdw gives it (dwarf_frame_register).
struct RegisterRule {
  enum class Kind { undefined, same, at_cfa, at_rsp, other };
  Kind kind = Kind::other;
  int64_t offset = 0;
};

RegisterRule register_rule(Dwarf_Frame* frame, int reg) {
  Dwarf_Op ops_mem[3];
  Dwarf_Op* ops = nullptr;
  size_t count = 0;
  if (dwarf_frame_register(frame, reg, ops_mem, &ops, &count) != 0) return {};
  if (count == 0) return {ops == nullptr ? RegisterRule::Kind::same : RegisterRule::Kind::undefined, 0};
  const std::span<const Dwarf_Op> rule(ops, count);
  // offset(N): DW_OP_call_frame_cfa [DW_OP_plus_uconst N], a location.
  if (rule[0].atom == DW_OP_call_frame_cfa) {
    if (rule.size() == 1) return {RegisterRule::Kind::at_cfa, 0};
    if (rule.size() == 2 && rule[1].atom == DW_OP_plus_uconst) {
      return {RegisterRule::Kind::at_cfa, static_cast<int64_t>(rule[1].number)};
    }
  }
  // expression(DW_OP_breg7 N): libdw puts the CFA first, as the expression
  // starts with it pushed; the value on top is rsp + N, a location.
  const auto expression = rule[0].atom == DW_OP_call_frame_cfa ? rule.subspan(1) : rule;
  if (expression.size() == 1) {
    if (const auto offset = breg_offset(expression[0], kRegisterRsp)) return {RegisterRule::Kind::at_rsp, *offset};
  }
  return {};
}

xref_unwind_row kind_only(uint8_t cfa_kind) {
  xref_unwind_row row{};
  row.cfa_kind = cfa_kind;
  return row;
}

// Where the caller's rbp is, for a row whose CFA is rsp- or rbp-based.
void set_rbp_rule(xref_unwind_row& row, const RegisterRule& rbp) {
  if (rbp.kind == RegisterRule::Kind::same || rbp.kind == RegisterRule::Kind::undefined) {
    row.rbp_kind = XREF_RBP_SAME;
  } else if (rbp.kind == RegisterRule::Kind::at_cfa && fits<int16_t>(rbp.offset)) {
    row.rbp_kind = XREF_RBP_AT_CFA;
    row.rbp_offset = static_cast<int16_t>(rbp.offset);
  } else {
    row.rbp_kind = XREF_RBP_UNSUPPORTED;
  }
}

// The row for libdw's frame state (everything but the pc).
xref_unwind_row translate(Dwarf_Frame* frame, bool signal_frame) {
  const RegisterRule ra = register_rule(frame, kRegisterRa);
  if (ra.kind == RegisterRule::Kind::undefined) return kind_only(XREF_CFA_END);
  const RegisterRule rbp = register_rule(frame, kRegisterRbp);

  Dwarf_Op* ops = nullptr;
  size_t count = 0;
  if (dwarf_frame_cfa(frame, &ops, &count) != 0 || count == 0) return kind_only(XREF_CFA_UNSUPPORTED);
  const std::span<const Dwarf_Op> cfa(ops, count);

  if (signal_frame) {
    // The kernel's rt_sigframe: a ucontext at rsp holds the interrupted
    // rsp (the CFA), rip and rbp.
    const auto base = cfa.size() == 2 && cfa[1].atom == DW_OP_deref ? breg_offset(cfa[0], kRegisterRsp) : std::nullopt;
    if (!base || ra.kind != RegisterRule::Kind::at_rsp || rbp.kind != RegisterRule::Kind::at_rsp ||
        !fits<int32_t>(*base) || !fits<int32_t>(ra.offset) || !fits<int16_t>(rbp.offset)) {
      return kind_only(XREF_CFA_UNSUPPORTED);
    }
    xref_unwind_row row{};
    row.cfa_kind = XREF_CFA_SIGNAL;
    row.cfa_offset = static_cast<int32_t>(*base);
    row.ra_offset = static_cast<int32_t>(ra.offset);
    row.rbp_kind = XREF_RBP_AT_CFA;
    row.rbp_offset = static_cast<int16_t>(rbp.offset);
    return row;
  }
  if (ra.kind != RegisterRule::Kind::at_cfa || !fits<int32_t>(ra.offset)) return kind_only(XREF_CFA_UNSUPPORTED);

  xref_unwind_row row{};
  row.ra_offset = static_cast<int32_t>(ra.offset);
  if (cfa.size() == 1) {
    const auto from_rsp = breg_offset(cfa[0], kRegisterRsp);
    const auto from_rbp = breg_offset(cfa[0], kRegisterRbp);
    const auto offset = from_rsp ? from_rsp : from_rbp;
    if (!offset || !fits<int32_t>(*offset)) return kind_only(XREF_CFA_UNSUPPORTED);
    row.cfa_kind = from_rsp ? XREF_CFA_RSP : XREF_CFA_RBP;
    row.cfa_offset = static_cast<int32_t>(*offset);
    set_rbp_rule(row, rbp);
    return row;
  }
  // The PLT's rule leaves no room for an rbp offset: rbp_offset holds the
  // threshold, and rbp must be unchanged (it is: the stubs only push and jump).
  const auto plt = plt_expression(cfa);
  if (!plt || !fits<int32_t>(plt->first) || plt->second > 15 ||
      (rbp.kind != RegisterRule::Kind::same && rbp.kind != RegisterRule::Kind::undefined)) {
    return kind_only(XREF_CFA_UNSUPPORTED);
  }
  row.cfa_kind = XREF_CFA_PLT;
  row.cfa_offset = static_cast<int32_t>(plt->first);
  row.rbp_kind = XREF_RBP_SAME;
  row.rbp_offset = static_cast<int16_t>(plt->second);
  return row;
}

bool same_rule(const xref_unwind_row& a, const xref_unwind_row& b) {
  return a.cfa_kind == b.cfa_kind && a.rbp_kind == b.rbp_kind && a.rbp_offset == b.rbp_offset &&
         a.cfa_offset == b.cfa_offset && a.ra_offset == b.ra_offset;
}

// ---------------------------------------------------------------------------
// The table being built: rows in pc order, identical neighbours merged.

class TableBuilder {
 public:
  TableBuilder(CfiTable& table, const std::string& path) : table_(table), path_(path) {}

  // A row found by running `instruction_bytes` of call-frame instructions.
  Result<void> add(uint64_t va, const xref_unwind_row& rule, uint64_t instruction_bytes = 0) {
    work_ += instruction_bytes + 1;
    if (work_ > kMostInstructionWork) {
      return over_limit(path_ + ": call-frame instructions too long to interpret (FDE rows at " + to_hex(va) + ")");
    }
    xref_unwind_row row = rule;
    row.pc = static_cast<uint32_t>(va - table_.origin);
    if (!table_.rows.empty() && same_rule(table_.rows.back(), row)) {
      ++table_.merged_rows;
      return {};
    }
    if (table_.rows.size() >= kMostCfiRows) {
      return over_limit(path_ + ": more than " + std::to_string(kMostCfiRows) + " unwind rows");
    }
    table_.rows.push_back(row);
    return {};
  }

 private:
  CfiTable& table_;
  const std::string& path_;
  uint64_t work_ = 0;  // instruction bytes libdw ran so far
};

// [start, end) of one FDE, static VAs, and the length of the instructions
// libdw runs for each of its rows (the CIE's and its own).
struct FdeSpan {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t instruction_bytes = 0;
};

// Every row libdw gives for the addresses [start, end) of one FDE.
Result<void> add_fde_rows(Dwarf_CFI* cfi, const FdeSpan& fde, TableBuilder& builder, const std::string& path) {
  uint64_t address = fde.start;
  while (address < fde.end) {
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi, address, &frame) != 0) {
      return damaged_cfi(path + ": bad call-frame information at " + to_hex(address) + ": " + libdw_error());
    }
    Dwarf_Addr row_start = 0, row_end = 0;
    bool signal_frame = false;
    const int info = dwarf_frame_info(frame, &row_start, &row_end, &signal_frame);
    const xref_unwind_row row = translate(frame, signal_frame);
    std::free(frame);
    if (info < 0) {
      return damaged_cfi(path + ": bad call-frame row at " + to_hex(address) + ": " + libdw_error());
    }
    if (row_end <= address) {
      return damaged_cfi(path + ": call-frame row at " + to_hex(address) + " ends before it starts");
    }
    auto added = builder.add(address, row, fde.instruction_bytes);
    if (!added) return added.error();
    address = std::min<uint64_t>(row_end, fde.end);
  }
  return {};
}

// All FDEs in start order: each one's rows, then a NONE row where the next
// does not start right at its end. An FDE overlapping the next one is cut
// at the next one's start, as an unwinder searching .eh_frame_hdr for the
// greatest start at or below a pc would.
Result<void> add_all_rows(Dwarf_CFI* cfi, std::vector<FdeSpan> fdes, CfiTable& table, const std::string& path) {
  std::sort(fdes.begin(), fdes.end(),
            [](const FdeSpan& a, const FdeSpan& b) { return a.start != b.start ? a.start < b.start : a.end < b.end; });
  TableBuilder builder(table, path);
  for (size_t i = 0; i < fdes.size(); ++i) {
    FdeSpan fde = fdes[i];
    const bool has_next = i + 1 < fdes.size();
    if (has_next) fde.end = std::min(fde.end, fdes[i + 1].start);
    if (fde.end <= fde.start) continue;  // wholly covered by the next FDE
    auto added = add_fde_rows(cfi, fde, builder, path);
    if (!added) return added.error();
    if (!has_next || fdes[i + 1].start != fde.end) {
      added = builder.add(fde.end, kind_only(XREF_CFA_NONE));
      if (!added) return added.error();
    }
  }
  for (const xref_unwind_row& row : table.rows) {
    table.unsupported_rows += row.cfa_kind == XREF_CFA_UNSUPPORTED;
    table.signal_rows += row.cfa_kind == XREF_CFA_SIGNAL;
    table.plt_rows += row.cfa_kind == XREF_CFA_PLT;
    table.end_rows += row.cfa_kind == XREF_CFA_END;
  }
  return {};
}

// The executable extent [origin, end) of the image's PT_LOADs.
struct ExecutableSpan {
  uint64_t origin = 0;
  uint64_t end = 0;
  bool any = false;
};

ExecutableSpan executable_span(const ElfImage& image) {
  ExecutableSpan span;
  for (const LoadSegment& segment : image.segments()) {
    if (!segment.executable() || segment.memsz == 0) continue;
    const uint64_t end = segment.vaddr + std::min(segment.memsz, ~uint64_t{0} - segment.vaddr);
    span.origin = span.any ? std::min(span.origin, segment.vaddr) : segment.vaddr;
    span.end = span.any ? std::max(span.end, end) : end;
    span.any = true;
  }
  return span;
}

// Keeps an FDE that lies inside the executable span; counts the others (a
// .debug_frame keeps FDEs of functions the linker discarded, at 0).
void keep_fde(uint64_t start, uint64_t size, uint64_t instruction_bytes, const ExecutableSpan& span,
              std::vector<FdeSpan>& fdes, CfiTable& table) {
  if (size == 0) return;
  if (start < span.origin || start >= span.end || size > span.end - start) {
    ++table.skipped_fdes;
    return;
  }
  fdes.push_back({start, start + size, instruction_bytes});
  ++table.fdes;
}

// The FDEs of .debug_frame: CIE and FDE records with absolute 8-byte
// initial locations and ranges (ELFCLASS64).
Result<std::vector<FdeSpan>> debug_frame_fdes(Elf* elf, const ExecutableSpan& span, CfiTable& table,
                                              const std::string& path) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return std::vector<FdeSpan>{};
  Elf_Scn* section = nullptr;
  GElf_Shdr header;
  while ((section = elf_nextscn(elf, section)) != nullptr) {
    if (gelf_getshdr(section, &header) == nullptr) continue;
    const char* name = elf_strptr(elf, names, header.sh_name);
    if (name != nullptr && std::strcmp(name, ".debug_frame") == 0) break;
  }
  const auto damaged = [&](const std::string& why) { return damaged_cfi(path + ": .debug_frame " + why); };
  if (section == nullptr || header.sh_type == SHT_NOBITS) return std::vector<FdeSpan>{};
  if ((header.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(section, 0, 0) < 0) {
    return damaged("cannot be decompressed: " + std::string(elf_errmsg(-1)));
  }
  Elf_Data* data = elf_getdata(section, nullptr);
  const unsigned char* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
  if (data == nullptr || ident == nullptr) return damaged("cannot be read");
  struct Fde {
    uint64_t start, size, instruction_bytes;
    Dwarf_Off cie;
  };
  std::vector<Fde> records;
  std::map<Dwarf_Off, uint64_t> cie_instruction_bytes;  // by the CIE's offset
  Dwarf_Off offset = 0;
  for (;;) {
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    const int read = dwarf_next_cfi(ident, data, false, offset, &next, &entry);
    if (read > 0) break;
    if (read < 0) return damaged("record at offset " + to_hex(offset) + ": " + libdw_error());
    if (next <= offset) return damaged("record at offset " + to_hex(offset) + " does not advance");
    if (dwarf_cfi_cie_p(&entry)) {
      cie_instruction_bytes[offset] =
          static_cast<uint64_t>(entry.cie.initial_instructions_end - entry.cie.initial_instructions);
    } else if (entry.fde.end < entry.fde.start || entry.fde.end - entry.fde.start < 16) {
      return damaged("FDE at offset " + to_hex(offset) + " is truncated");
    } else {
      Fde fde{0, 0, static_cast<uint64_t>(entry.fde.end - entry.fde.start), entry.fde.CIE_pointer};
      std::memcpy(&fde.start, entry.fde.start, 8);
      std::memcpy(&fde.size, entry.fde.start + 8, 8);
      if (records.size() >= kMostCfiRows) return too_many_fdes(path);
      records.push_back(fde);
    }
    offset = next;
  }
  std::vector<FdeSpan> fdes;
  for (const Fde& fde : records) {
    const auto cie = cie_instruction_bytes.find(fde.cie);
    if (cie == cie_instruction_bytes.end()) return damaged("FDE points to no CIE (" + to_hex(fde.cie) + ")");
    keep_fde(fde.start, fde.size, fde.instruction_bytes + cie->second, span, fdes, table);
  }
  return fdes;
}

}  // namespace

Result<CfiTable> compile_cfi_table(const std::string& elf_path) {
  auto image = ElfImage::open(elf_path);
  if (!image) return image.error();
  return compile_cfi_table(*image);
}

Result<CfiTable> compile_cfi_table(const ElfImage& image) {
  const std::string& elf_path = image.path();
  CfiTable table;
  const ExecutableSpan span = executable_span(image);
  if (!span.any) return table;  // no code: nothing to unwind
  if (span.end - span.origin > kMostPcOffset) {
    return over_limit(elf_path + ": executable segments span more than 4 GiB");
  }
  table.origin = span.origin;

  // .eh_frame, when it describes any code: what the runtime unwinds with.
  std::vector<FdeSpan> fdes;
  const SectionInfo* eh_frame = image.section(".eh_frame");
  if (eh_frame != nullptr && !image.section_bytes(*eh_frame).empty()) {
    const EhFrame* frame = image.eh_frame();
    if (frame == nullptr) {
      return damaged_cfi(elf_path + ": .eh_frame cannot be read: " + image.fde_error());
    }
    if (frame->fdes.size() > kMostCfiRows) return too_many_fdes(elf_path);
    for (const EhFrameFde& fde : frame->fdes) {
      const EhFrameCie& cie = frame->cies[fde.cie_index];
      const uint64_t instruction_bytes = (fde.instructions_end - fde.instructions_begin) +
                                         (cie.instructions_end - cie.instructions_begin);
      keep_fde(fde.range.start, fde.range.size, instruction_bytes, span, fdes, table);
    }
  }

  elf_version(EV_CURRENT);
  const std::unique_ptr<Elf, ElfEnd> elf(elf_begin(image.file().descriptor(), ELF_C_READ_MMAP, nullptr));
  if (elf == nullptr || elf_kind(elf.get()) != ELF_K_ELF) {
    return make_error(ErrorCode::elf_error, elf_path + ": libelf cannot read it: " + std::string(elf_errmsg(-1)),
                      "name an ELF executable or library");
  }
  std::unique_ptr<Dwarf, DwarfEnd> dwarf;
  std::unique_ptr<Dwarf_CFI, CfiEnd> eh_frame_cfi;
  Dwarf_CFI* cfi = nullptr;
  if (!fdes.empty()) {
    eh_frame_cfi.reset(dwarf_getcfi_elf(elf.get()));
    if (eh_frame_cfi == nullptr) return damaged_cfi(elf_path + ": libdw cannot read .eh_frame: " + libdw_error());
    cfi = eh_frame_cfi.get();
    table.source = ".eh_frame";
  } else {
    // No .eh_frame FDE: a module built with -fno-asynchronous-unwind-tables -g.
    table.fdes = table.skipped_fdes = 0;
    auto debug_fdes = debug_frame_fdes(elf.get(), span, table, elf_path);
    if (!debug_fdes) return debug_fdes.error();
    if (debug_fdes->empty()) return table;
    dwarf.reset(dwarf_begin_elf(elf.get(), DWARF_C_READ, nullptr));
    cfi = dwarf != nullptr ? dwarf_getcfi(dwarf.get()) : nullptr;
    if (cfi == nullptr) return damaged_cfi(elf_path + ": libdw cannot read .debug_frame: " + libdw_error());
    fdes = std::move(*debug_fdes);
    table.source = ".debug_frame";
  }
  auto added = add_all_rows(cfi, std::move(fdes), table, elf_path);
  if (!added) return added.error();
  return table;
}

const xref_unwind_row* cfi_row_at(const CfiTable& table, uint64_t static_va) {
  if (static_va < table.origin) return nullptr;
  // Past 4 GiB from the origin: beyond every row, so the last one's rule.
  const auto pc = static_cast<uint32_t>(std::min(static_va - table.origin, kMostPcOffset));
  const auto after = std::upper_bound(table.rows.begin(), table.rows.end(), pc,
                                      [](uint32_t value, const xref_unwind_row& row) { return value < row.pc; });
  return after == table.rows.begin() ? nullptr : &*(after - 1);
}

}  // namespace xref
