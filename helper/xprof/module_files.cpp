#include "xprof/module_files.h"

#include "input/input_file.h"

namespace xref {

ModuleFiles::ModuleFiles(const Profile& profile, std::map<uint32_t, std::string> paths)
    : profile_(profile), paths_(std::move(paths)) {}

std::string ModuleFiles::path(uint32_t module) const {
  if (const auto given = paths_.find(module); given != paths_.end()) return given->second;
  return module < profile_.modules.size() ? profile_.modules[module].path : "";
}

ModuleFiles::Entry& ModuleFiles::entry(uint32_t module) {
  Entry& entry = entries_[module];
  if (entry.opened) return entry;
  entry.opened = true;
  if (module >= profile_.modules.size()) {
    entry.problem = make_error(ErrorCode::invalid_argument, "no module (JIT or vDSO code)");
    return entry;
  }
  const std::string file = path(module);
  auto image = open_user_elf(file);
  if (!image) {
    entry.problem = image.error();
    return entry;
  }
  const std::string& recorded = profile_.modules[module].build_id;
  const std::string hint = "give the file of the captured build (--bin for the executable)";
  if (recorded.empty()) {
    entry.problem = make_error(ErrorCode::capture_mismatch,
                               file + ": the capture recorded no build-id to check the file against", hint);
  } else if (image->build_id() != recorded) {
    entry.problem = make_error(ErrorCode::capture_mismatch,
                               file + ": build-id " + (image->build_id().empty() ? "none" : image->build_id()) +
                                   " is not the capture's " + recorded,
                               hint);
  } else {
    entry.image = std::make_shared<const ElfImage>(std::move(*image));
  }
  return entry;
}

const ElfImage* ModuleFiles::image(uint32_t module) { return entry(module).image.get(); }

const SourceLines* ModuleFiles::lines(uint32_t module) {
  Entry& found = entry(module);
  if (!found.image) return nullptr;
  if (!found.lines_opened) {
    found.lines_opened = true;
    auto lines = SourceLines::open(found.image->path());
    // A file that was read as ELF has lines or none; an error here is
    // counted as none (the report names the module and says no line).
    if (lines) found.lines = std::move(*lines);
  }
  return found.lines ? &*found.lines : nullptr;
}

std::string ModuleFiles::why_not(uint32_t module) const {
  const auto found = entries_.find(module);
  return found != entries_.end() && found->second.problem ? found->second.problem->message : "";
}

std::optional<Error> ModuleFiles::image_error(uint32_t module) { return entry(module).problem; }

}  // namespace xref
