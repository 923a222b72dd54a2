#include "xprof/annotate.h"

#include <filesystem>
#include <map>

#include "disassembly.h"
#include "xprof/frames.h"
#include "xprof/source_text.h"

namespace xref {
namespace {

Result<uint32_t> the_function(const Profile& profile, const std::string& what) {
  const std::vector<uint32_t> named = functions_named(profile, what);
  if (named.empty()) {
    return make_error(ErrorCode::invalid_argument, "no function of the capture is " + what,
                      "give a function `xref profile report FILE --by function` shows, or a 0xVA inside one");
  }
  if (named.size() > 1) {
    std::string which;
    for (uint32_t index : named) {
      const ProfileFunction& function = profile.functions[index];
      which += (which.empty() ? "" : ", ") + function.name + " (" +
               (function.module < profile.modules.size() ? profile.modules[function.module].path : "no module") + ")";
      if (which.size() > 200) break;
    }
    return make_error(ErrorCode::invalid_argument, what + " names several functions of the capture: " + which,
                      "give the address of the one to annotate (0xVA)");
  }
  return named.front();
}

}  // namespace

Result<Annotation> annotate_function(const Profile& profile, const std::string& what, ModuleFiles& files,
                                     const AnnotateOptions& options) {
  auto selection_total = profile.total_samples();
  if (selection_total == 0) {
    return make_error(ErrorCode::empty_capture, "the capture holds no sample", "profile longer, or while the process runs");
  }
  auto index = the_function(profile, what);
  if (!index) return index.error();
  const ProfileFunction& function = profile.functions[*index];

  Annotation annotation;
  annotation.name = function.name;
  annotation.profile_samples = selection_total;
  std::map<uint64_t, uint64_t> at_address;
  std::vector<uint64_t> stack_samples(profile.stacks.size(), 0);
  for (const ProfileSample& sample : profile.samples) stack_samples[sample.stack] += sample.count;
  for (size_t stack = 0; stack < profile.stacks.size(); ++stack) {
    const ProfileLocation& leaf = profile.locations[profile.stacks[stack].locations.front()];
    if (leaf.function != *index || stack_samples[stack] == 0) continue;
    if (profile.stacks[stack].in_kernel) annotation.kernel_samples += stack_samples[stack];
    else at_address[leaf.address] += stack_samples[stack];
  }
  for (const auto& [address, samples] : at_address) annotation.function_samples += samples;
  if (annotation.function_samples == 0) {
    return make_error(ErrorCode::empty_capture,
                      function.name + " took no sample of its own" +
                          (annotation.kernel_samples ? " in user mode" : "") + " (only the functions it calls did)",
                      "annotate a function with self samples in `xref profile report FILE --by function`");
  }

  if (auto error = files.image_error(function.module)) return *error;
  const ElfImage& image = *files.image(function.module);
  annotation.module = files.path(function.module);
  const FunctionSymbol* symbol = image.function_containing(function.start);
  if (symbol == nullptr || symbol->start != function.start) {
    return make_error(ErrorCode::capture_mismatch,
                      annotation.module + " has no function at " + function.name + "'s start in the capture",
                      "give the file of the captured build");
  }
  auto code = disassemble(image, *symbol);
  if (!code) return code.error();
  annotation.start = code->start;
  annotation.end = code->end;
  annotation.share_base = options.percent_function ? annotation.function_samples : annotation.profile_samples;
  const SourceLines* lines = files.lines(function.module);
  SourceTexts texts;
  std::optional<SourceLine> previous_line;
  uint64_t placed = 0;
  uint64_t hottest = 0;
  for (const Instruction& instruction : code->instructions) {
    const auto found = at_address.find(instruction.address);
    const uint64_t samples = found == at_address.end() ? 0 : found->second;
    placed += samples;
    hottest = std::max(hottest, samples);
    if (samples < options.min_samples) {
      ++annotation.hidden_instructions;
      continue;
    }
    AnnotatedInstruction row{instruction.address, instruction.size, instruction.text, samples, std::nullopt, false, std::nullopt};
    if (lines != nullptr) row.line = lines->at(instruction.address);
    if (row.line) {
      row.line->file = std::filesystem::path(row.line->file).lexically_normal().string();
      annotation.has_lines = true;
      const bool new_line = !previous_line || previous_line->file != row.line->file ||
                            previous_line->line != row.line->line;
      if (options.source && new_line) row.source_text = texts.line(row.line->file, row.line->line);
      previous_line = row.line;
    }
    annotation.instructions.push_back(std::move(row));
  }
  for (AnnotatedInstruction& row : annotation.instructions) row.hottest = hottest > 0 && row.samples == hottest;
  annotation.unplaced_samples = annotation.function_samples - placed;
  annotation.unreadable_sources = texts.unreadable();
  return annotation;
}

}  // namespace xref
