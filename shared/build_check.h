// Whether a file is a given build: its build-id and its SHA-256 against the
// expected ones. Used for --bin against a live process (helper/target.cpp)
// and for the binary of a saved trace (helper/trace_show.cpp).
#pragma once

#include <string>

#include "elf_image.h"
#include "result.h"

namespace xref {

// What makes the file at `path` (opened as `image`) another build than the
// one with `build_id` and `sha256` (an empty one is not checked), said
// against `whose` ("the process's"): "build-id X differs from the
// process's Y", "its SHA-256 differs from the process's executable"; "" when it is
// that build. An error when the file cannot be hashed.
Result<std::string> build_difference(const ElfImage& image, const std::string& path, const std::string& build_id,
                                     const std::string& sha256, const std::string& whose);

}  // namespace xref
