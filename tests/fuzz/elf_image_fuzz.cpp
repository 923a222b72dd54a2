// ELF images, as `xref resolve`, `trace` and `trace show --tree` open them
// (a target's executable and libraries are files its owner can write): the
// input is the file, opened through a memfd, then asked what the commands
// ask: functions by address and by name, FDEs, CFA rules, file offsets and
// bytes, GOT slots.
#include <algorithm>

#include "cfa_rule.h"
#include "elf_image.h"
#include "fuzz_support.h"

using namespace xref;

namespace {

constexpr size_t kFunctionsAsked = 16;

void ask_about_address(const ElfImage& image, uint64_t va) {
  if (const FunctionSymbol* function = image.function_containing(va)) {
    fuzz::require(function->contains(va) || function->size == 0, "function_containing gave a function without va");
  }
  (void)image.function_at(va);
  (void)image.next_function_start(va);
  if (auto record = image.fde_record(va); !record) fuzz::require_one_line_error(record.error());
  if (auto rule = cfa_rule_at(image, va); !rule) fuzz::require_one_line_error(rule.error());
  if (auto offset = image.file_offset_of(va)) {
    (void)image.vas_of_file_offset(*offset);
  }
  (void)image.bytes_at(va, 16);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemoryFile file(data, size);
  auto image = ElfImage::open(file.path());
  if (!image) {
    fuzz::require_one_line_error(image.error());
    return 0;
  }
  for (const SectionInfo& section : image->sections()) (void)image->section_bytes(section);
  (void)image->got_slots();
  ask_about_address(*image, image->entry());
  for (const LoadSegment& segment : image->segments()) ask_about_address(*image, segment.vaddr);

  const std::vector<const FunctionSymbol*> functions = image->all_functions();
  fuzz::require(std::is_sorted(functions.begin(), functions.end(),
                               [](const FunctionSymbol* a, const FunctionSymbol* b) { return a->start < b->start; }),
                "all_functions is not sorted by start");
  for (size_t index = 0; index < std::min(functions.size(), kFunctionsAsked); ++index) {
    const FunctionSymbol& function = *functions[index];
    ask_about_address(*image, function.start);
    if (function.size > 1) ask_about_address(*image, function.start + function.size - 1);
    (void)image->bytes_at(function.start, function.size);
    (void)image->match_functions(function.name);
    (void)image->match_functions(function.demangled);
  }
  if (image->eh_frame() == nullptr) (void)image->fde_error();
  return 0;
}
