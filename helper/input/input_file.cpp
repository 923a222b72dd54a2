#include "input/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>

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

// `unopened` starts the message of a file that cannot be opened, `named`
// that of a file that is not regular; each is followed by the path.
Result<InputFile> open_regular(const std::string& path, const std::string& unopened, const std::string& named) {
  auto fd = open_user_file(path, O_RDONLY);
  if (!fd) {
    Error error = fd.error();
    error.message = unopened + error.message;
    return error;
  }
  struct stat status {};
  if (fstat(fd->get(), &status) != 0) {
    return make_error(ErrorCode::file_error, unopened + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode)) {
    return make_error(ErrorCode::file_error,
                      named + path + " is not a regular file (it is " + kind_of(status.st_mode) + ")");
  }
  return InputFile{std::move(*fd), static_cast<uint64_t>(status.st_size), {status.st_dev, status.st_ino}};
}

}  // namespace

Result<InputFile> open_regular_file(const std::string& path, const std::string& what) {
  const std::string role = what.empty() ? std::string() : what + " ";
  return open_regular(path, "cannot read " + role, role);
}

Result<ElfImage> open_user_elf(const std::string& path) {
  auto file = open_regular(path, "", "");
  if (!file) return file.error();
  return ElfImage::open_descriptor(std::move(file->fd), path);
}

}  // namespace xref
