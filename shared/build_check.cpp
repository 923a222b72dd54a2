#include "build_check.h"

#include "file_digest.h"

namespace xref {

Result<std::string> build_difference(const ElfImage& image, const std::string& path, const std::string& build_id,
                                     const std::string& sha256, const std::string& whose) {
  if (!build_id.empty() && image.build_id() != build_id) {
    return "build-id " + (image.build_id().empty() ? std::string("(none)") : image.build_id()) + " differs from " +
           whose + " " + build_id;
  }
  if (sha256.empty()) return std::string();
  auto digest = sha256_file(path);
  if (!digest) return digest.error();
  if (*digest != sha256) return "its SHA-256 differs from " + whose + " executable";
  return std::string();
}

}  // namespace xref
