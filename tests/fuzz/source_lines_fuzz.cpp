// DWARF line tables, as `xref resolve` and the renderers read them (a
// target's executable and libraries, and the debug files found beside them,
// are files their owner can write): the input is the module, opened through
// a memfd, asked for the line of its entry and of addresses across its
// executable segments.
#include <algorithm>

#include "elf_image.h"
#include "fuzz_support.h"
#include "source_lines.h"

using namespace xref;

namespace {

constexpr uint64_t kAddressesPerSegment = 64;

void ask(const SourceLines& lines, uint64_t va) {
  if (const auto line = lines.at(va)) {
    fuzz::require(line->line > 0, "a source line numbered 0");
    fuzz::require(!line->file.empty(), "a source line without a file");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemoryFile file(data, size);
  // No separate debug files: the input alone (a debug root that does not exist).
  auto lines = SourceLines::open(file.path(), "/nonexistent/xref-fuzz-debug");
  if (!lines) {
    fuzz::require_one_line_error(lines.error());
    return 0;
  }
  fuzz::require(lines->debug_file().empty() || lines->debug_file() == file.path(),
                "lines from a file other than the input", lines->debug_file());
  auto image = ElfImage::open(file.path());
  if (!image) return 0;
  ask(*lines, image->entry());
  for (const LoadSegment& segment : image->segments()) {
    if (!segment.executable()) continue;
    const uint64_t step = std::max<uint64_t>(1, segment.memsz / kAddressesPerSegment);
    for (uint64_t index = 0; index < kAddressesPerSegment; ++index) ask(*lines, segment.vaddr + index * step);
  }
  return 0;
}
