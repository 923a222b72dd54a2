// .eh_frame walking, following the LSB "Exception Frames" layout: a sequence
// of CIE and FDE records, each starting with a length. Only what locates code
// is decoded (the FDE pointer encoding, initial_location, address_range); the
// call-frame instructions are skipped. Every read is bounds-checked because
// the bytes come from arbitrary, possibly hostile, binaries.
#include "eh_frame.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

namespace xref {
namespace {

// DW_EH_PE_* pointer encodings: the low nibble is the value format, bits
// 4-6 the application, bit 7 "indirect", and 0xff "omitted".
constexpr uint8_t kPeAbsptr = 0x00;
constexpr uint8_t kPeUleb128 = 0x01;
constexpr uint8_t kPeUdata2 = 0x02;
constexpr uint8_t kPeUdata4 = 0x03;
constexpr uint8_t kPeUdata8 = 0x04;
constexpr uint8_t kPeSigned = 0x08;  // signed value of the address size
constexpr uint8_t kPeSleb128 = 0x09;
constexpr uint8_t kPeSdata2 = 0x0a;
constexpr uint8_t kPeSdata4 = 0x0b;
constexpr uint8_t kPeSdata8 = 0x0c;
constexpr uint8_t kPeFormatMask = 0x0f;
constexpr uint8_t kPeApplicationMask = 0x70;
constexpr uint8_t kPePcrel = 0x10;
constexpr uint8_t kPeAligned = 0x50;
constexpr uint8_t kPeIndirect = 0x80;
constexpr uint8_t kPeOmit = 0xff;

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

// What an FDE needs from its CIE.
struct Cie {
  uint8_t fde_encoding = kPeAbsptr;    // 'R'; absptr when the CIE has no 'R'
  bool has_augmentation_data = false;  // 'z': FDEs carry an augmentation length
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

// Walks the augmentation string and data of the CIE whose header is `header`.
Result<Cie> parse_cie(std::span<const uint8_t> section, const RecordHeader& header) {
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
  uint64_t code_alignment = 0;
  uint64_t data_alignment = 0;
  uint64_t return_register = 0;
  if (!cursor.uleb128(code_alignment)) return malformed(cursor.pos(), "bad CIE code alignment");
  if (!cursor.sleb128(data_alignment)) return malformed(cursor.pos(), "bad CIE data alignment");
  const bool register_ok =
      version == 1 ? cursor.unsigned_fixed(1, return_register) : cursor.uleb128(return_register);
  if (!register_ok) return malformed(cursor.pos(), "bad CIE return address register");

  Cie cie;
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
  }
  for (size_t i = cie.has_augmentation_data ? 1 : 0; i < augmentation.size(); ++i) {
    const char letter = augmentation[i];
    const size_t at = data.pos();
    if (letter == 'S' || letter == 'B') continue;  // signal frame / AArch64 B-key: no data
    if (!cie.has_augmentation_data) {
      return malformed(augmentation_pos, "CIE augmentation \"" + std::string(augmentation) +
                                             "\" lacks a leading 'z'");
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
        return malformed(augmentation_pos + i,
                         std::string("unknown CIE augmentation character '") + letter + "'");
    }
  }
  return cie;
}

Result<FdeRange> parse_fde(std::span<const uint8_t> section, uint64_t section_va,
                           const RecordHeader& header, const Cie& cie) {
  Cursor cursor(section, header.body, header.end);
  const size_t location_pos = cursor.pos();
  uint64_t location = 0;
  if (!read_value(cursor, cie.fde_encoding, location)) {
    return malformed(location_pos, "bad FDE initial_location (truncated or over 64 bits)");
  }
  if ((cie.fde_encoding & kPeApplicationMask) == kPePcrel) location += section_va + location_pos;
  uint64_t range = 0;
  const size_t range_pos = cursor.pos();
  // The range has the same value format, but is a size: no application.
  if (!read_value(cursor, static_cast<uint8_t>(cie.fde_encoding & kPeFormatMask), range)) {
    return malformed(range_pos, "bad FDE address_range (truncated or over 64 bits)");
  }
  if (cie.has_augmentation_data) {
    uint64_t data_length = 0;
    const size_t length_pos = cursor.pos();
    if (!cursor.uleb128(data_length) || data_length > cursor.remaining()) {
      return malformed(length_pos, "FDE augmentation data runs past the record");
    }
  }
  if (range != 0 && location + range < location) {
    return malformed(range_pos,
                     "FDE range " + hex(location) + "+" + hex(range) + " wraps the address space");
  }
  return FdeRange{location, range};
}

}  // namespace

Result<std::vector<FdeRange>> parse_eh_frame(std::span<const uint8_t> section,
                                             uint64_t section_va) {
  std::unordered_map<size_t, Cie> cies;  // by record offset; an FDE's CIE always precedes it
  std::vector<FdeRange> ranges;
  size_t offset = 0;
  while (offset < section.size()) {
    auto header = read_header(section, offset);
    if (!header) return header.error();
    if (header->terminator) break;
    if (header->id == 0) {
      auto cie = parse_cie(section, *header);
      if (!cie) return cie.error();
      cies.emplace(offset, *cie);
    } else {
      // The CIE pointer counts back from the pointer field itself.
      if (header->id > header->id_pos) {
        return malformed(header->id_pos,
                         "FDE CIE pointer " + hex(header->id) + " points before the section");
      }
      const size_t cie_offset = header->id_pos - static_cast<size_t>(header->id);
      const auto found = cies.find(cie_offset);
      if (found == cies.end()) {
        return malformed(header->id_pos, "FDE CIE pointer " + hex(header->id) +
                                             " leads to offset " + hex(cie_offset) +
                                             ", which is not a CIE");
      }
      auto fde = parse_fde(section, section_va, *header, found->second);
      if (!fde) return fde.error();
      if (fde->size != 0) ranges.push_back(*fde);  // empty FDEs describe no code
    }
    offset = header->end;
  }
  std::sort(ranges.begin(), ranges.end(), [](const FdeRange& a, const FdeRange& b) {
    return a.start != b.start ? a.start < b.start : a.size < b.size;
  });
  return ranges;
}

}  // namespace xref
