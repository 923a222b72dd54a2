#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xref {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int saved = errno;
    return make_error(saved == EACCES ? ErrorCode::permission_denied : ErrorCode::file_error,
                      path + ": " + std::strerror(saved), "check the path and its permissions");
  }
  return map(std::move(fd), path);
}

Result<std::shared_ptr<const MappedFile>> MappedFile::map(UniqueFd fd, const std::string& path) {
  struct stat status;
  if (fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode) || status.st_size < 64) {
    return make_error(ErrorCode::elf_error, path + ": not a regular ELF file",
                      "pass an ELF executable or shared object");
  }
  // Shared, not private: the kernel installs the int3 of every uprobe
  // registered on this file into each private mapping of it (uprobe_mmap),
  // so with tracefs uprobe events (or any tracer's system-wide uprobes) a
  // private mapping would show breakpoints instead of the file's bytes.
  // Shared mappings are left alone, and read-only they read the same.
  void* data = mmap(nullptr, static_cast<size_t>(status.st_size), PROT_READ, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED) {
    const int saved = errno;
    return make_error(ErrorCode::file_error, path + ": cannot map: " + std::strerror(saved));
  }
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const uint8_t*>(data), static_cast<size_t>(status.st_size), fd.release()));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

size_t MappedFile::read_at(uint64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size() && offset + done < size_) {
    const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace xref
