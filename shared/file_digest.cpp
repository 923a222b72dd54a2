#include "file_digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "hex.h"
#include "unique_fd.h"

namespace xref {

Result<std::string> sha256_file(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int saved = errno;
    return make_error(saved == EACCES ? ErrorCode::permission_denied : ErrorCode::file_error,
                      path + ": " + std::strerror(saved));
  }
  return sha256_descriptor(fd.get(), path);
}

Result<std::string> sha256_descriptor(int fd, const std::string& path) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    return make_error(ErrorCode::internal, "SHA-256 unavailable in libcrypto");
  }
  std::vector<uint8_t> buffer(1 << 20);
  for (off_t offset = 0;;) {
    const ssize_t count = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (count < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::file_error, path + ": read failed: " + std::strerror(errno));
    }
    if (count == 0) break;
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<size_t>(count));
    offset += count;
  }
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  return to_hex_bytes(std::span<const uint8_t>(digest, length));
}

}  // namespace xref
