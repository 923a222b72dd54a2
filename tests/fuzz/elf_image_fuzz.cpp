// ELF images, as `xref resolve`, `trace` and `trace show --tree` open them
// (a target's executable and libraries are files its owner can write): the
// input is the file, opened through a memfd, then asked what the commands
// ask: functions by address and by name, FDEs, CFA rules, file offsets and
// bytes, GOT slots; and the unwind table `xref profile` compiles from its CFI.
#include <algorithm>

#include "cfa_rule.h"
#include "cfi_table.h"
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

// The rows sorted by pc, each a rule the BPF unwinder knows, the counts
// the table gives true.
void compile_unwind_table(const std::string& path) {
  auto table = compile_cfi_table(path);
  if (!table) {
    fuzz::require_one_line_error(table.error());
    return;
  }
  fuzz::require(table->rows.size() <= kMostCfiRows, "more unwind rows than the bound");
  uint64_t unsupported = 0;
  for (size_t index = 0; index < table->rows.size(); ++index) {
    const xref_unwind_row& row = table->rows[index];
    fuzz::require(index == 0 || row.pc > table->rows[index - 1].pc, "unwind rows not sorted by pc");
    fuzz::require(row.cfa_kind >= XREF_CFA_RSP && row.cfa_kind <= XREF_CFA_UNSUPPORTED, "an unknown CFA kind");
    fuzz::require(row.rbp_kind <= XREF_RBP_UNSUPPORTED, "an unknown rbp rule");
    fuzz::require(cfi_row_at(*table, table->origin + row.pc) == &row, "cfi_row_at misses a row's own pc");
    unsupported += row.cfa_kind == XREF_CFA_UNSUPPORTED;
  }
  fuzz::require(unsupported == table->unsupported_rows, "unsupported_rows miscounted");
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
  compile_unwind_table(file.path());
  return 0;
}
