// .eh_frame and .eh_frame_hdr as ElfImage hands them over, without the rest
// of the file. The input is
//   u64 .eh_frame VA | u64 .eh_frame_hdr VA | u16 .eh_frame_hdr size | .eh_frame_hdr | .eh_frame
// (little-endian), the layout make_eh_frame_seed writes from a real image.
// The section is walked, every CIE's and FDE's instructions decoded, the
// CFA interpreter run inside each FDE, and the FDEs the header's table
// points at read one at a time, as a lookup through it does.
#include <algorithm>

#include "cfa_rule.h"
#include "eh_frame.h"
#include "eh_frame_hdr.h"
#include "fuzz_support.h"

using namespace xref;

namespace {

constexpr size_t kRecordsVisited = 64;

void decode_all(std::span<const uint8_t> section, const EhFrame& frame, const EhFrameCie& cie, size_t begin,
                size_t end, uint64_t location) {
  auto decoded = decode_call_frame_instructions(section, frame, cie, begin, end, location,
                                                [](const CallFrameInstruction&) { return true; });
  if (!decoded) fuzz::require_one_line_error(decoded.error());
}

void check_record(const EhFrameRecord& record, size_t section_size) {
  fuzz::require(record.fde.instructions_begin <= record.fde.instructions_end &&
                    record.fde.instructions_end <= section_size,
                "an FDE's instructions lie outside the section");
  fuzz::require(record.cie.instructions_begin <= record.cie.instructions_end &&
                    record.cie.instructions_end <= section_size,
                "a CIE's instructions lie outside the section");
}

void walk(std::span<const uint8_t> section, uint64_t section_va) {
  auto frame = read_eh_frame(section, section_va);
  if (!frame) {
    fuzz::require_one_line_error(frame.error());
    return;
  }
  for (const EhFrameCie& cie : frame->cies) {
    fuzz::require(cie.instructions_begin <= cie.instructions_end && cie.instructions_end <= section.size(),
                  "a CIE's instructions lie outside the section");
    decode_all(section, *frame, cie, cie.instructions_begin, cie.instructions_end, 0);
  }
  size_t visited = 0;
  for (const EhFrameFde& fde : frame->fdes) {
    if (++visited > kRecordsVisited) break;
    fuzz::require(fde.cie_index < frame->cies.size(), "an FDE without its CIE");
    const EhFrameCie& cie = frame->cies[fde.cie_index];
    check_record({cie, fde}, section.size());
    decode_all(section, *frame, cie, fde.instructions_begin, fde.instructions_end, fde.range.start);
    const uint64_t last = fde.range.size > 0 ? fde.range.start + (fde.range.size - 1) : fde.range.start;
    for (uint64_t va : {fde.range.start, fde.range.start + fde.range.size / 2, last}) {
      if (auto rule = cfa_rule_at(section, *frame, va); !rule) fuzz::require_one_line_error(rule.error());
    }
    if (auto record = read_fde_at(section, section_va, fde.offset)) {
      check_record(*record, section.size());
      fuzz::require(record->fde.range == fde.range, "an FDE read alone has another range than walked");
    } else {
      fuzz::fail("an FDE the walk read cannot be read alone", record.error().message);
    }
  }
  (void)parse_eh_frame(section, section_va);
}

void look_up(std::span<const uint8_t> hdr_bytes, uint64_t hdr_va, std::span<const uint8_t> section,
             uint64_t section_va) {
  auto hdr = EhFrameHdr::read(hdr_bytes, hdr_va);
  if (!hdr) {
    fuzz::require_one_line_error(hdr.error());
    return;
  }
  for (size_t index = 0; index < std::min(hdr->size(), kRecordsVisited); ++index) {
    fuzz::require(hdr->count_at_or_before(hdr->start(index)) <= hdr->size(), "count_at_or_before past the table");
    const uint64_t fde_va = hdr->fde_va(index);
    if (fde_va < section_va || fde_va - section_va >= section.size()) continue;
    auto record = read_fde_at(section, section_va, static_cast<size_t>(fde_va - section_va));
    if (!record) {
      fuzz::require_one_line_error(record.error());
      continue;
    }
    check_record(*record, section.size());
    EhFrame alone;
    alone.section_va = section_va;
    alone.cies.push_back(record->cie);
    decode_all(section, alone, record->cie, record->fde.instructions_begin, record->fde.instructions_end,
               record->fde.range.start);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FieldReader input(data, size);
  const uint64_t section_va = input.take<uint64_t>();
  const uint64_t hdr_va = input.take<uint64_t>();
  const std::span<const uint8_t> hdr_bytes = input.take_bytes(input.take<uint16_t>());
  const std::span<const uint8_t> section = input.rest();
  walk(section, section_va);
  look_up(hdr_bytes, hdr_va, section, section_va);
  return 0;
}
