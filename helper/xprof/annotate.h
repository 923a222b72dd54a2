// `xref profile annotate`: one function's instructions (Capstone, from the
// module's file of the captured build) with the samples taken at each (its
// self samples in user mode), their share of the whole capture or, with
// --percent function, of the function's own samples, and the source line
// where DWARF has one; the hottest instruction marked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "source_lines.h"
#include "xprof/module_files.h"

namespace xref {

struct AnnotateOptions {
  bool percent_function = false;  // shares of the function's samples, not of the capture's
  uint64_t min_samples = 0;       // instructions with fewer samples are left out (counted)
  bool source = false;            // the source text of each line, before its first instruction
};

struct AnnotatedInstruction {
  uint64_t address = 0;
  uint8_t size = 0;
  std::string text;
  uint64_t samples = 0;
  std::optional<SourceLine> line;
  bool hottest = false;
  // With AnnotateOptions::source: the text of `line` on the first
  // instruction of each run of one line (nullopt elsewhere, or unreadable).
  std::optional<std::string> source_text;
};

struct Annotation {
  std::string name;
  std::string module;  // the path read
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<AnnotatedInstruction> instructions;  // those with at least min_samples
  uint64_t hidden_instructions = 0;                // left out by min_samples
  uint64_t function_samples = 0;   // samples whose leaf is in the function, user mode
  uint64_t kernel_samples = 0;     // samples that entered the kernel from it (not on an instruction)
  uint64_t unplaced_samples = 0;   // samples at an address no decoded instruction starts at
  uint64_t profile_samples = 0;
  uint64_t share_base = 0;         // what shares are of
  bool has_lines = false;          // DWARF lines were found for the module
  std::vector<std::string> unreadable_sources;  // with --source: "PATH: why" for files not read
};

// `what`: a function name (as report --by function shows it, or its raw
// symbol, or without parameters) or a 0xVA inside it. Errors:
// empty_capture (no sample at all, or none of its own in the function),
// invalid_argument (no function of the capture answers, or several do),
// the module file's errors (ModuleFiles::image_error).
Result<Annotation> annotate_function(const Profile& profile, const std::string& what, ModuleFiles& files,
                                     const AnnotateOptions& options);

}  // namespace xref
