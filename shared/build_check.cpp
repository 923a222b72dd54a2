#include "build_check.h"

#include "file_digest.h"

namespace xref {

Result<BuildComparison> compare_build(const ElfImage& image, const std::string& path, const std::string& build_id,
                                      const std::string& sha256, const std::string& whose) {
  BuildComparison comparison;
  if (!build_id.empty() && image.build_id() != build_id) {
    comparison.difference = "build-id " + (image.build_id().empty() ? std::string("(none)") : image.build_id()) +
                            " differs from " + whose + " " + build_id;
    return comparison;
  }
  if (sha256.empty()) return comparison;
  // The bytes that were opened, not the path again: it may name another
  // file by now, or one this user could not open.
  auto digest = sha256_descriptor(image.file().descriptor(), path);
  if (!digest) return digest.error();
  if (*digest == sha256) return comparison;
  if (build_id.empty()) {
    comparison.difference = "its SHA-256 differs from " + whose + " executable";
  } else {
    comparison.other_bytes = true;
  }
  return comparison;
}

}  // namespace xref
