// A whole file mapped read-only, shared so that everything that points into
// it (ELF images, their symbol names) keeps it alive.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "result.h"
#include "unique_fd.h"

namespace xref {

class MappedFile {
 public:
  // Fails with file_error or permission_denied (cannot open or map) and
  // elf_error (not a regular file of at least an ELF header's size).
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
  // The same for a file already open for reading (which it then owns);
  // `path` only names it in errors.
  static Result<std::shared_ptr<const MappedFile>> map(UniqueFd fd, const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Copies file bytes at `offset` into `out` without touching the mapping
  // (pread), so streaming through a large table leaves no pages mapped in
  // this process. The number of bytes read: fewer at the end of the file.
  size_t read_at(uint64_t offset, std::span<uint8_t> out) const;
  // The open file, for reads that must not go by name again (sha256_descriptor).
  int descriptor() const { return fd_; }

 private:
  MappedFile(const uint8_t* data, size_t size, int fd) : data_(data), size_(size), fd_(fd) {}
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace xref
