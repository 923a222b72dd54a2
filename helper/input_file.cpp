#include "input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xref {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

std::string prefix(const std::string& what) { return what.empty() ? std::string() : what + " "; }

}  // namespace

Result<InputFile> open_regular_file(const std::string& path, const std::string& what) {
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer;
  // O_NOCTTY: a terminal never becomes ours.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat status {};
  if (fd < 0 || fstat(fd, &status) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    return make_error(ErrorCode::file_error, "cannot read " + prefix(what) + path + ": " + std::strerror(error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::file_error,
                      prefix(what) + path + " is not a regular file (it is " + kind_of(status.st_mode) + ")");
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return InputFile{fd, static_cast<uint64_t>(status.st_size), status.st_dev, status.st_ino};
}

}  // namespace xref
