#include "eh_frame_hdr.h"

#include <cstring>
#include <string>

#include "dwarf_pointer_encoding.h"
#include "hex.h"

namespace xref {
namespace {

constexpr size_t kHeaderSize = 4;
constexpr size_t kEntrySize = 8;  // two datarel sdata4 fields

Error unsupported(const std::string& what) {
  return make_error(ErrorCode::unsupported, ".eh_frame_hdr: " + what, "the .eh_frame section is walked instead");
}

template <typename T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace

Result<EhFrameHdr> EhFrameHdr::read(std::span<const uint8_t> section, uint64_t section_va) {
  if (section.size() < kHeaderSize) return unsupported("truncated header");
  const uint8_t version = section[0];
  const uint8_t pointer_encoding = section[1];
  const uint8_t count_encoding = section[2];
  const uint8_t table_encoding = section[3];
  if (version != 1) return unsupported("version " + std::to_string(version));
  size_t at = kHeaderSize;
  EhFrameHdr hdr;
  hdr.section_va_ = section_va;
  if (pointer_encoding == (kPePcrel | kPeSdata4) && section.size() >= at + 4) {
    hdr.eh_frame_va_ = section_va + at + static_cast<uint64_t>(static_cast<int64_t>(load<int32_t>(&section[at])));
    at += 4;
  } else if (pointer_encoding == kPeUdata4 && section.size() >= at + 4) {
    hdr.eh_frame_va_ = load<uint32_t>(&section[at]);
    at += 4;
  } else if (pointer_encoding == kPeUdata8 && section.size() >= at + 8) {
    hdr.eh_frame_va_ = load<uint64_t>(&section[at]);
    at += 8;
  } else {
    return unsupported("eh_frame_ptr encoding " + to_hex(pointer_encoding));
  }
  if (count_encoding == kPeOmit || table_encoding == kPeOmit) return unsupported("no search table");
  uint64_t count = 0;
  if (count_encoding == kPeUdata4 && section.size() >= at + 4) {
    count = load<uint32_t>(&section[at]);
    at += 4;
  } else if (count_encoding == kPeUdata8 && section.size() >= at + 8) {
    count = load<uint64_t>(&section[at]);
    at += 8;
  } else {
    return unsupported("fde_count encoding " + to_hex(count_encoding));
  }
  if (table_encoding != (kPeDatarel | kPeSdata4)) return unsupported("table encoding " + to_hex(table_encoding));
  if (count > (section.size() - at) / kEntrySize) return unsupported("table runs past the section");
  hdr.table_ = section.data() + at;
  hdr.count_ = static_cast<size_t>(count);
  return hdr;
}

int32_t EhFrameHdr::field(size_t i, size_t which) const {
  return load<int32_t>(table_ + i * kEntrySize + which * 4);
}

uint64_t EhFrameHdr::start(size_t i) const {
  return section_va_ + static_cast<uint64_t>(static_cast<int64_t>(field(i, 0)));
}

uint64_t EhFrameHdr::fde_va(size_t i) const {
  return section_va_ + static_cast<uint64_t>(static_cast<int64_t>(field(i, 1)));
}

size_t EhFrameHdr::count_at_or_before(uint64_t va) const {
  size_t low = 0;
  size_t high = count_;
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    if (start(middle) <= va) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

}  // namespace xref
