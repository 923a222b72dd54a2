// The files of a capture's modules, for the reports that read code or DWARF
// (line, block, annotate): opened by the path the capture recorded (or the
// one --bin gives for the executable), as the user (input_file.h), and used
// only when the build-id is the capture's, since a rebuilt file's addresses
// mean other code. What cannot be used says why, and the samples it would
// have named are reported apart with that reason.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "elf_image.h"
#include "source_lines.h"
#include "xprof/profile.h"

namespace xref {

class ModuleFiles {
 public:
  // `paths`: module index -> the file to read instead of the recorded path.
  explicit ModuleFiles(const Profile& profile, std::map<uint32_t, std::string> paths = {});

  // The module's image, or null with why_not(module) saying why.
  const ElfImage* image(uint32_t module);
  // Its DWARF lines, or null (no file; or none found: why_not says so).
  const SourceLines* lines(uint32_t module);
  // "no module (JIT or vDSO code)", "/lib/x.so: No such file or directory",
  // "/app: build-id 12ab… is not the capture's 34cd…"; "" when the image is there.
  std::string why_not(uint32_t module) const;
  // The same as an error: file_error/permission_denied/elf_error opening it,
  // capture_mismatch for another build (or none to check), invalid_argument
  // for code in no module.
  std::optional<Error> image_error(uint32_t module);
  // The path read for the module.
  std::string path(uint32_t module) const;

 private:
  struct Entry {
    bool opened = false;
    std::shared_ptr<const ElfImage> image;
    std::optional<Error> problem;
    bool lines_opened = false;
    std::optional<SourceLines> lines;
  };
  Entry& entry(uint32_t module);

  const Profile& profile_;
  std::map<uint32_t, std::string> paths_;
  std::map<uint32_t, Entry> entries_;
};

}  // namespace xref
