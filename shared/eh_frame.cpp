// .eh_frame walking, following the LSB "Exception Frames" layout: a sequence
// of CIE and FDE records, each starting with a length. The walk decodes what
// locates code (the FDE pointer encoding, initial_location, address_range) and
// where each record's call-frame instructions lie; the instructions themselves
// are decoded only on request, so a damaged FDE program does not hide the
// ranges. Every read is bounds-checked because the bytes come from arbitrary,
// possibly hostile, binaries.
#include "eh_frame.h"

#include "dwarf_pointer_encoding.h"
#include "parse_error_render.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

namespace xref {
namespace {

// xref reads x86-64 images only, so "absptr" and "signed" are 8 bytes wide.
constexpr size_t kAddressSize = 8;

constexpr uint32_t kExtendedLength = 0xffffffffu;

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

Error malformed(size_t offset, std::string_view what) {
  return make_error(ErrorCode::elf_error,
                    ".eh_frame: " + std::string(what) + " at offset " + hex(offset),
                    "the image's unwind tables are damaged or use an unsupported layout");
}

// A bounds-checked little-endian reader over [pos, limit) of the section.
// A failed read leaves `pos` at the start of the field, so the caller's error
// names the offset of the field that did not fit.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, size_t pos, size_t limit)
      : bytes_(bytes), pos_(pos), limit_(limit) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return limit_ - pos_; }

  bool unsigned_fixed(size_t width, uint64_t& out) {
    if (width > remaining()) return false;
    out = 0;
    for (size_t i = 0; i < width; ++i) out |= uint64_t{bytes_[pos_ + i]} << (8 * i);
    pos_ += width;
    return true;
  }

  bool signed_fixed(size_t width, uint64_t& out) {
    if (!unsigned_fixed(width, out)) return false;
    const unsigned bits = static_cast<unsigned>(8 * width);
    if (bits < 64 && (out >> (bits - 1)) & 1u) out |= ~uint64_t{0} << bits;
    return true;
  }

  bool skip(uint64_t count) {
    if (count > remaining()) return false;
    pos_ += static_cast<size_t>(count);
    return true;
  }

  bool byte(uint8_t& out) {
    if (remaining() < 1) return false;
    out = bytes_[pos_++];
    return true;
  }

  // LEB128 values wider than 64 bits are rejected rather than truncated.
  bool uleb128(uint64_t& out) { return leb128(false, out); }
  bool sleb128(uint64_t& out) { return leb128(true, out); }

  // A NUL-terminated string; the terminator is consumed but not returned.
  bool cstring(std::string_view& out) {
    for (size_t i = pos_; i < limit_; ++i) {
      if (bytes_[i] == 0) {
        out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return true;
      }
    }
    return false;
  }

 private:
  // Redundant padding bytes are allowed (linkers emit them), as long as the
  // value still fits: for an sleb every bit past bit 63 must copy bit 63.
  bool leb128(bool is_signed, uint64_t& out) {
    uint64_t value = 0;
    unsigned shift = 0;
    for (size_t i = pos_; i < limit_; ++i) {
      const uint8_t b = bytes_[i];
      const uint64_t payload = b & 0x7fu;
      uint64_t overflow = payload;  // the payload bits that land past bit 63
      unsigned overflow_bits = 7;
      if (shift < 64) {
        value |= payload << shift;
        overflow_bits = shift > 57 ? shift - 57 : 0;
        overflow = overflow_bits ? payload >> (7 - overflow_bits) : 0;
      }
      if (overflow_bits) {
        const bool negative = is_signed && (value >> 63) != 0;
        if (overflow != (negative ? (uint64_t{1} << overflow_bits) - 1 : 0)) return false;
      }
      shift += 7;
      if ((b & 0x80u) == 0) {
        if (is_signed && shift < 64 && (b & 0x40u)) value |= ~uint64_t{0} << shift;
        out = value;
        pos_ = i + 1;
        return true;
      }
    }
    return false;
  }

  std::span<const uint8_t> bytes_;
  size_t pos_;
  size_t limit_;
};

// The common record header: length, then the CIE id / CIE pointer field.
struct RecordHeader {
  size_t start = 0;   // offset of the length field
  size_t end = 0;     // one past the last byte of the record
  size_t id_pos = 0;  // offset of the CIE id / CIE pointer field
  size_t body = 0;    // offset of the first field after it
  uint64_t id = 0;    // 0 for a CIE, else the FDE's CIE pointer
  bool terminator = false;
};

Result<RecordHeader> read_header(std::span<const uint8_t> section, size_t offset) {
  Cursor cursor(section, offset, section.size());
  RecordHeader header;
  header.start = offset;
  uint64_t length = 0;
  if (!cursor.unsigned_fixed(4, length)) return malformed(offset, "truncated record length");
  if (length == 0) {
    header.terminator = true;
    return header;
  }
  // A 64-bit record: an 8-byte length follows, and (as binutils, GDB and LLDB
  // read it; LLVM's libunwind disagrees, but no x86-64 producer emits these)
  // the CIE id / pointer field is 8 bytes wide too.
  size_t id_width = 4;
  if (length == kExtendedLength) {
    if (!cursor.unsigned_fixed(8, length)) {
      return malformed(cursor.pos(), "truncated extended length");
    }
    id_width = 8;
  }
  if (length > cursor.remaining()) {
    const std::string sizes = hex(length) + " (section size " + hex(section.size()) + ")";
    return malformed(offset, "record length " + sizes + " runs past the end of the section");
  }
  header.end = cursor.pos() + static_cast<size_t>(length);
  header.id_pos = cursor.pos();
  Cursor body(section, cursor.pos(), header.end);
  if (!body.unsigned_fixed(id_width, header.id)) {
    return malformed(header.id_pos, "record too short for its CIE id");
  }
  header.body = body.pos();
  return header;
}

// The number of bytes a value of format `encoding & 0x0f` occupies, for the
// fixed-size formats; 0 for LEB128 and unknown formats.
size_t fixed_width(uint8_t encoding) {
  switch (encoding & kPeFormatMask) {
    case kPeAbsptr:
    case kPeSigned:
    case kPeUdata8:
    case kPeSdata8: return kAddressSize;
    case kPeUdata2:
    case kPeSdata2: return 2;
    case kPeUdata4:
    case kPeSdata4: return 4;
    default: return 0;
  }
}

bool known_format(uint8_t encoding) {
  const uint8_t format = encoding & kPeFormatMask;
  return fixed_width(encoding) != 0 || format == kPeUleb128 || format == kPeSleb128;
}

// Reads the raw value of `encoding`'s format (no application).
bool read_value(Cursor& cursor, uint8_t encoding, uint64_t& out) {
  switch (encoding & kPeFormatMask) {
    case kPeUleb128: return cursor.uleb128(out);
    case kPeSleb128: return cursor.sleb128(out);
    case kPeAbsptr:
    case kPeUdata2:
    case kPeUdata4:
    case kPeUdata8: return cursor.unsigned_fixed(fixed_width(encoding), out);
    case kPeSigned:
    case kPeSdata2:
    case kPeSdata4:
    case kPeSdata8: return cursor.signed_fixed(fixed_width(encoding), out);
    default: return false;
  }
}

// The FDE pointer encoding must give a static VA by itself: absolute or
// relative to the field. textrel/datarel/funcrel need bases .eh_frame does not
// provide on x86-64, and an indirect initial_location makes no sense.
Result<void> check_fde_encoding(uint8_t encoding, size_t offset) {
  if (encoding == kPeOmit) return malformed(offset, "FDE pointer encoding is 'omit'");
  if (!known_format(encoding)) {
    return malformed(offset, "unknown FDE pointer encoding " + hex(encoding));
  }
  if (encoding & kPeIndirect) {
    return malformed(offset, "indirect FDE pointer encoding " + hex(encoding));
  }
  const uint8_t application = encoding & kPeApplicationMask;
  if (application != 0 && application != kPePcrel) {
    return malformed(offset, "unsupported FDE pointer application in encoding " + hex(encoding));
  }
  return {};
}

// Reads an FDE code pointer (initial_location, DW_CFA_set_loc operand) in the
// CIE's 'R' encoding, whose validity check_fde_encoding has established.
bool read_code_pointer(Cursor& cursor, uint8_t encoding, uint64_t section_va, uint64_t& out) {
  const size_t field_pos = cursor.pos();
  if (!read_value(cursor, encoding, out)) return false;
  if ((encoding & kPeApplicationMask) == kPePcrel) out += section_va + field_pos;
  return true;
}

// Walks the augmentation string and data of the CIE whose header is `header`.
Result<EhFrameCie> parse_cie(std::span<const uint8_t> section, const RecordHeader& header) {
  Cursor cursor(section, header.body, header.end);
  uint8_t version = 0;
  if (!cursor.byte(version)) return malformed(cursor.pos(), "CIE truncated before its version");
  if (version != 1 && version != 3) {
    return malformed(cursor.pos() - 1, "unsupported CIE version " + std::to_string(version));
  }
  const size_t augmentation_pos = cursor.pos();
  std::string_view augmentation;
  if (!cursor.cstring(augmentation)) {
    return malformed(augmentation_pos, "unterminated CIE augmentation string");
  }
  if (augmentation.starts_with("eh")) {
    return malformed(augmentation_pos, "unsupported pre-GCC-3 \"eh\" CIE augmentation");
  }
  EhFrameCie cie;
  cie.offset = header.start;
  uint64_t data_alignment = 0;
  if (!cursor.uleb128(cie.code_alignment)) return malformed(cursor.pos(), "bad CIE code alignment");
  if (!cursor.sleb128(data_alignment)) return malformed(cursor.pos(), "bad CIE data alignment");
  cie.data_alignment = static_cast<int64_t>(data_alignment);
  const bool register_ok = version == 1 ? cursor.unsigned_fixed(1, cie.return_address_register)
                                        : cursor.uleb128(cie.return_address_register);
  if (!register_ok) return malformed(cursor.pos(), "bad CIE return address register");

  cie.instructions_begin = cursor.pos();
  cie.instructions_end = header.end;
  if (augmentation.empty()) return cie;
  // Without a leading 'z' there is no augmentation data, so only letters that
  // carry no data can be understood.
  cie.has_augmentation_data = augmentation.front() == 'z';
  Cursor data = cursor;
  if (cie.has_augmentation_data) {
    uint64_t data_length = 0;
    const size_t length_pos = cursor.pos();
    if (!cursor.uleb128(data_length) || data_length > cursor.remaining()) {
      return malformed(length_pos, "CIE augmentation data runs past the record");
    }
    data = Cursor(section, cursor.pos(), cursor.pos() + static_cast<size_t>(data_length));
    cie.instructions_begin = cursor.pos() + static_cast<size_t>(data_length);
  }
  for (size_t i = cie.has_augmentation_data ? 1 : 0; i < augmentation.size(); ++i) {
    const char letter = augmentation[i];
    const size_t at = data.pos();
    if (letter == 'S') cie.signal_frame = true;
    if (letter == 'S' || letter == 'B') continue;  // signal frame / AArch64 B-key: no data
    if (!cie.has_augmentation_data) {
      return malformed(augmentation_pos, "CIE augmentation " + quoted_text(augmentation) + " lacks a leading 'z'");
    }
    uint8_t encoding = 0;
    switch (letter) {
      case 'R':
        if (!data.byte(encoding)) return malformed(at, "CIE augmentation data truncated");
        if (auto checked = check_fde_encoding(encoding, at); !checked) return checked.error();
        cie.fde_encoding = encoding;
        break;
      case 'L':  // LSDA encoding: shapes only the FDE augmentation data, which is skipped
        if (!data.byte(encoding)) return malformed(at, "CIE augmentation data truncated");
        cie.has_lsda = true;
        break;
      case 'P': {  // personality routine: an encoding byte, then a pointer to skip
        if (!data.byte(encoding)) return malformed(at, "CIE augmentation data truncated");
        if (!known_format(encoding) || (encoding & kPeApplicationMask) == kPeAligned) {
          return malformed(at, "unsupported personality pointer encoding " + hex(encoding));
        }
        uint64_t personality = 0;
        if (!read_value(data, encoding, personality)) {
          return malformed(data.pos(), "truncated personality pointer");
        }
        break;
      }
      default:
        // Unknown letters may carry data of unknown size, and may come before
        // 'R', so the FDE layout cannot be trusted.
        return malformed(augmentation_pos + i, "unknown CIE augmentation character " + quoted_character(letter));
    }
  }
  return cie;
}

Result<EhFrameFde> parse_fde(std::span<const uint8_t> section, uint64_t section_va,
                             const RecordHeader& header, const EhFrameCie& cie) {
  Cursor cursor(section, header.body, header.end);
  const size_t location_pos = cursor.pos();
  uint64_t location = 0;
  if (!read_code_pointer(cursor, cie.fde_encoding, section_va, location)) {
    return malformed(location_pos, "bad FDE initial_location (truncated or over 64 bits)");
  }
  uint64_t range = 0;
  const size_t range_pos = cursor.pos();
  // The range has the same value format, but is a size: no application.
  if (!read_value(cursor, static_cast<uint8_t>(cie.fde_encoding & kPeFormatMask), range)) {
    return malformed(range_pos, "bad FDE address_range (truncated or over 64 bits)");
  }
  size_t instructions_begin = cursor.pos();
  if (cie.has_augmentation_data) {
    uint64_t data_length = 0;
    const size_t length_pos = cursor.pos();
    if (!cursor.uleb128(data_length) || data_length > cursor.remaining()) {
      return malformed(length_pos, "FDE augmentation data runs past the record");
    }
    instructions_begin = cursor.pos() + static_cast<size_t>(data_length);
  }
  if (range != 0 && location + range < location) {
    return malformed(range_pos,
                     "FDE range " + hex(location) + "+" + hex(range) + " wraps the address space");
  }
  EhFrameFde fde;
  fde.offset = header.start;
  fde.range = FdeRange{location, range};
  fde.instructions_begin = instructions_begin;
  fde.instructions_end = header.end;
  return fde;
}

// DW_CFA_* opcodes. The three primary ones keep an operand in their low six bits.
constexpr uint8_t kCfaPrimaryMask = 0xc0;
constexpr uint8_t kCfaAdvanceLoc = 0x40;
constexpr uint8_t kCfaOffset = 0x80;
constexpr uint8_t kCfaRestore = 0xc0;
constexpr uint8_t kCfaNop = 0x00;
constexpr uint8_t kCfaSetLoc = 0x01;
constexpr uint8_t kCfaAdvanceLoc1 = 0x02;
constexpr uint8_t kCfaAdvanceLoc2 = 0x03;
constexpr uint8_t kCfaAdvanceLoc4 = 0x04;
constexpr uint8_t kCfaOffsetExtended = 0x05;
constexpr uint8_t kCfaRestoreExtended = 0x06;
constexpr uint8_t kCfaUndefined = 0x07;
constexpr uint8_t kCfaSameValue = 0x08;
constexpr uint8_t kCfaRegister = 0x09;
constexpr uint8_t kCfaRememberState = 0x0a;
constexpr uint8_t kCfaRestoreState = 0x0b;
constexpr uint8_t kCfaDefCfa = 0x0c;
constexpr uint8_t kCfaDefCfaRegister = 0x0d;
constexpr uint8_t kCfaDefCfaOffset = 0x0e;
constexpr uint8_t kCfaDefCfaExpression = 0x0f;
constexpr uint8_t kCfaExpression = 0x10;
constexpr uint8_t kCfaOffsetExtendedSf = 0x11;
constexpr uint8_t kCfaDefCfaSf = 0x12;
constexpr uint8_t kCfaDefCfaOffsetSf = 0x13;
constexpr uint8_t kCfaValOffset = 0x14;
constexpr uint8_t kCfaValOffsetSf = 0x15;
constexpr uint8_t kCfaValExpression = 0x16;
constexpr uint8_t kCfaGnuArgsSize = 0x2e;
constexpr uint8_t kCfaGnuNegativeOffsetExtended = 0x2f;

// Operand decoding for one instruction; each read failure names the offset of
// the operand that did not fit.
class InstructionReader {
 public:
  InstructionReader(Cursor& cursor, CallFrameInstruction& instruction)
      : cursor_(cursor), instruction_(instruction) {}

  Result<void> uleb(uint64_t& out) {
    if (!cursor_.uleb128(out)) return truncated();
    return {};
  }
  Result<void> sleb(int64_t& out) {
    uint64_t raw = 0;
    if (!cursor_.sleb128(raw)) return truncated();
    out = static_cast<int64_t>(raw);
    return {};
  }
  Result<void> fixed(size_t width, uint64_t& out) {
    if (!cursor_.unsigned_fixed(width, out)) return truncated();
    return {};
  }
  Result<void> reg() { return uleb(instruction_.reg); }
  // A DWARF expression block: a ULEB128 length, then that many bytes.
  Result<void> skip_block() {
    uint64_t length = 0;
    if (auto read = uleb(length); !read) return read;
    if (!cursor_.skip(length)) return truncated();
    return {};
  }
  // value = factor * operand, rejecting results that do not fit.
  Result<void> scaled(int64_t operand, int64_t factor) {
    if (__builtin_mul_overflow(operand, factor, &instruction_.value)) {
      return malformed(instruction_.offset, opcode_name() + " offset overflows 64 bits");
    }
    return {};
  }
  Result<void> unsigned_scaled(uint64_t operand, int64_t factor) {
    if (operand > static_cast<uint64_t>(INT64_MAX)) {
      return malformed(instruction_.offset, opcode_name() + " offset overflows 64 bits");
    }
    return scaled(static_cast<int64_t>(operand), factor);
  }
  Result<void> advance(uint64_t& location, uint64_t delta, uint64_t code_alignment) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(delta, code_alignment, &bytes) ||
        __builtin_add_overflow(location, bytes, &location)) {
      return malformed(instruction_.offset, "advance past the end of the address space");
    }
    instruction_.kind = CallFrameInstruction::Kind::advance_location;
    instruction_.location = location;
    return {};
  }

 private:
  std::string opcode_name() const { return "call-frame instruction " + hex(instruction_.opcode); }
  Error truncated() const {
    return malformed(instruction_.offset, opcode_name() + " truncated (operand at offset " +
                                              hex(cursor_.pos()) + " runs past the record)");
  }

  Cursor& cursor_;
  CallFrameInstruction& instruction_;
};

// Decodes the instruction at the cursor into `instruction`, moving `location`
// on for advances.
Result<void> decode_instruction(Cursor& cursor, const EhFrame& frame, const EhFrameCie& cie,
                                uint64_t& location, CallFrameInstruction& instruction) {
  using Kind = CallFrameInstruction::Kind;
  instruction = CallFrameInstruction{};
  instruction.offset = cursor.pos();
  uint8_t byte = 0;
  if (!cursor.byte(byte)) return malformed(cursor.pos(), "call-frame instructions truncated");
  InstructionReader read(cursor, instruction);
  const uint8_t primary = byte & kCfaPrimaryMask;
  const uint8_t low_bits = byte & static_cast<uint8_t>(~kCfaPrimaryMask);
  instruction.opcode = primary != 0 ? primary : byte;
  uint64_t operand = 0;
  int64_t signed_operand = 0;
  switch (instruction.opcode) {
    case kCfaAdvanceLoc: return read.advance(location, low_bits, cie.code_alignment);
    case kCfaAdvanceLoc1:
    case kCfaAdvanceLoc2:
    case kCfaAdvanceLoc4: {
      const size_t width = size_t{1} << (instruction.opcode - kCfaAdvanceLoc1);
      if (auto ok = read.fixed(width, operand); !ok) return ok;
      return read.advance(location, operand, cie.code_alignment);
    }
    case kCfaSetLoc: {
      const size_t operand_pos = cursor.pos();
      if (!read_code_pointer(cursor, cie.fde_encoding, frame.section_va, location)) {
        return malformed(operand_pos, "bad DW_CFA_set_loc address");
      }
      instruction.kind = Kind::advance_location;
      instruction.location = location;
      return {};
    }
    case kCfaDefCfa:
      instruction.kind = Kind::def_cfa;
      if (auto ok = read.reg(); !ok) return ok;
      if (auto ok = read.uleb(operand); !ok) return ok;
      return read.unsigned_scaled(operand, 1);
    case kCfaDefCfaSf:
      instruction.kind = Kind::def_cfa;
      if (auto ok = read.reg(); !ok) return ok;
      if (auto ok = read.sleb(signed_operand); !ok) return ok;
      return read.scaled(signed_operand, cie.data_alignment);
    case kCfaDefCfaRegister:
      instruction.kind = Kind::def_cfa_register;
      return read.reg();
    case kCfaDefCfaOffset:
      instruction.kind = Kind::def_cfa_offset;
      if (auto ok = read.uleb(operand); !ok) return ok;
      return read.unsigned_scaled(operand, 1);
    case kCfaDefCfaOffsetSf:
      instruction.kind = Kind::def_cfa_offset;
      if (auto ok = read.sleb(signed_operand); !ok) return ok;
      return read.scaled(signed_operand, cie.data_alignment);
    case kCfaDefCfaExpression:
      instruction.kind = Kind::def_cfa_expression;
      return read.skip_block();
    case kCfaRememberState: instruction.kind = Kind::remember_state; return {};
    case kCfaRestoreState: instruction.kind = Kind::restore_state; return {};
    case kCfaNop: return {};
    case kCfaGnuArgsSize: return read.uleb(operand);
    default: break;
  }
  // The rest set the rule of one register other than the CFA.
  instruction.kind = Kind::register_rule;
  switch (instruction.opcode) {
    case kCfaOffset:
      instruction.reg = low_bits;
      if (auto ok = read.uleb(operand); !ok) return ok;
      return read.unsigned_scaled(operand, cie.data_alignment);
    case kCfaRestore: instruction.reg = low_bits; return {};
    case kCfaOffsetExtended:
    case kCfaValOffset:
      if (auto ok = read.reg(); !ok) return ok;
      if (auto ok = read.uleb(operand); !ok) return ok;
      return read.unsigned_scaled(operand, cie.data_alignment);
    case kCfaOffsetExtendedSf:
    case kCfaValOffsetSf:
      if (auto ok = read.reg(); !ok) return ok;
      if (auto ok = read.sleb(signed_operand); !ok) return ok;
      return read.scaled(signed_operand, cie.data_alignment);
    case kCfaGnuNegativeOffsetExtended: {
      if (auto ok = read.reg(); !ok) return ok;
      if (auto ok = read.uleb(operand); !ok) return ok;
      if (auto ok = read.unsigned_scaled(operand, cie.data_alignment); !ok) return ok;
      if (instruction.value == INT64_MIN) {
        return malformed(instruction.offset, "call-frame instruction 0x2f offset overflows 64 bits");
      }
      instruction.value = -instruction.value;
      return {};
    }
    case kCfaRestoreExtended:
    case kCfaUndefined:
    case kCfaSameValue: return read.reg();
    case kCfaRegister:
      if (auto ok = read.reg(); !ok) return ok;
      return read.uleb(operand);  // the register holding the value
    case kCfaExpression:
    case kCfaValExpression:
      if (auto ok = read.reg(); !ok) return ok;
      return read.skip_block();
    default:
      return malformed(instruction.offset, "unknown call-frame instruction " + hex(byte));
  }
}

}  // namespace

Result<EhFrame> read_eh_frame(std::span<const uint8_t> section, uint64_t section_va) {
  EhFrame frame;
  frame.section_va = section_va;
  std::unordered_map<size_t, size_t> cie_index;  // by record offset; an FDE's CIE always precedes it
  size_t offset = 0;
  while (offset < section.size()) {
    auto header = read_header(section, offset);
    if (!header) return header.error();
    if (header->terminator) break;
    if (header->id == 0) {
      auto cie = parse_cie(section, *header);
      if (!cie) return cie.error();
      cie_index.emplace(offset, frame.cies.size());
      frame.cies.push_back(*cie);
    } else {
      // The CIE pointer counts back from the pointer field itself.
      if (header->id > header->id_pos) {
        return malformed(header->id_pos,
                         "FDE CIE pointer " + hex(header->id) + " points before the section");
      }
      const size_t cie_offset = header->id_pos - static_cast<size_t>(header->id);
      const auto found = cie_index.find(cie_offset);
      if (found == cie_index.end()) {
        return malformed(header->id_pos, "FDE CIE pointer " + hex(header->id) +
                                             " leads to offset " + hex(cie_offset) +
                                             ", which is not a CIE");
      }
      auto fde = parse_fde(section, section_va, *header, frame.cies[found->second]);
      if (!fde) return fde.error();
      fde->cie_index = found->second;
      frame.fdes.push_back(*fde);
    }
    offset = header->end;
  }
  std::stable_sort(frame.fdes.begin(), frame.fdes.end(),
                   [](const EhFrameFde& a, const EhFrameFde& b) {
                     return a.range.start != b.range.start ? a.range.start < b.range.start
                                                           : a.range.size < b.range.size;
                   });
  return frame;
}

Result<EhFrameRecord> read_fde_at(std::span<const uint8_t> section, uint64_t section_va, size_t fde_offset) {
  auto header = read_header(section, fde_offset);
  if (!header) return header.error();
  if (header->terminator || header->id == 0) return malformed(fde_offset, "no FDE starts here");
  if (header->id > header->id_pos) {
    return malformed(header->id_pos, "FDE CIE pointer " + hex(header->id) + " points before the section");
  }
  const size_t cie_offset = header->id_pos - static_cast<size_t>(header->id);
  auto cie_header = read_header(section, cie_offset);
  if (!cie_header) return cie_header.error();
  if (cie_header->terminator || cie_header->id != 0) {
    return malformed(header->id_pos, "FDE CIE pointer " + hex(header->id) + " leads to offset " + hex(cie_offset) +
                                         ", which is not a CIE");
  }
  auto cie = parse_cie(section, *cie_header);
  if (!cie) return cie.error();
  auto fde = parse_fde(section, section_va, *header, *cie);
  if (!fde) return fde.error();
  return EhFrameRecord{*cie, *fde};
}

Result<std::vector<FdeRange>> parse_eh_frame(std::span<const uint8_t> section,
                                             uint64_t section_va) {
  auto frame = read_eh_frame(section, section_va);
  if (!frame) return frame.error();
  std::vector<FdeRange> ranges;
  for (const EhFrameFde& fde : frame->fdes) {
    if (fde.range.size != 0) ranges.push_back(fde.range);  // empty FDEs describe no code
  }
  return ranges;
}

Result<void> decode_call_frame_instructions(
    std::span<const uint8_t> section, const EhFrame& frame, const EhFrameCie& cie, size_t begin,
    size_t end, uint64_t location, const std::function<bool(const CallFrameInstruction&)>& visit) {
  if (begin > end || end > section.size()) {
    return malformed(begin, "call-frame instructions [" + hex(begin) + ", " + hex(end) +
                                ") lie outside the section");
  }
  Cursor cursor(section, begin, end);
  CallFrameInstruction instruction;
  while (cursor.remaining() > 0) {
    if (auto decoded = decode_instruction(cursor, frame, cie, location, instruction); !decoded) {
      return decoded;
    }
    if (!visit(instruction)) break;
  }
  return {};
}

}  // namespace xref
