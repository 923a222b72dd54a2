// .eh_frame_hdr: the table of (function start, FDE address) pairs, sorted by
// start, that the runtime unwinder binary-searches. Reading it lets xref find
// the FDE of one address without walking the whole .eh_frame (libLLVM's is
// 6 MB with 118,000 FDEs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "result.h"

namespace xref {

class EhFrameHdr {
 public:
  // `section` is the bytes of .eh_frame_hdr, at static VA `section_va`. Only
  // the layout every linker emits is read: version 1 and a table encoded
  // DW_EH_PE_datarel|sdata4; anything else (or no table) fails with
  // ErrorCode::unsupported, and the caller walks .eh_frame instead.
  static Result<EhFrameHdr> read(std::span<const uint8_t> section, uint64_t section_va);

  // Static VA of the .eh_frame section the table points into.
  uint64_t eh_frame_va() const { return eh_frame_va_; }
  size_t size() const { return count_; }
  // Function start and FDE address (static VAs) of entry i < size().
  uint64_t start(size_t i) const;
  uint64_t fde_va(size_t i) const;
  // The number of entries whose start is <= va: entry (result - 1) is the
  // one with the greatest start at or before va, when result > 0.
  size_t count_at_or_before(uint64_t va) const;

 private:
  int32_t field(size_t i, size_t which) const;
  const uint8_t* table_ = nullptr;
  size_t count_ = 0;
  uint64_t section_va_ = 0;
  uint64_t eh_frame_va_ = 0;
};

}  // namespace xref
