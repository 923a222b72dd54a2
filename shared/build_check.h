// Whether a file is a given build: its build-id against the expected one,
// and its SHA-256 only where no build-id can say. Used for --bin against a
// live process (helper/target.cpp) and for the binary of a saved trace
// (helper/trace_show.cpp).
#pragma once

#include <string>

#include "elf_image.h"
#include "result.h"

namespace xref {

struct BuildComparison {
  // Why the file is another build, said against `whose` ("the process's"):
  // "build-id X differs from the process's Y", "its SHA-256 differs from the
  // process's executable"; empty when it is the same build.
  std::string difference;
  // The same build in other bytes (one copy stripped, or its notes edited):
  // the build-ids are equal and the SHA-256s are not.
  bool other_bytes = false;
};

// A file with the expected build-id is that build, whatever its SHA-256:
// `strip` changes the bytes, not the code. Only when the expected build has
// no build-id is the SHA-256 compared (an empty `sha256` is not checked). An
// error when the file cannot be hashed.
Result<BuildComparison> compare_build(const ElfImage& image, const std::string& path, const std::string& build_id,
                                      const std::string& sha256, const std::string& whose);

}  // namespace xref
