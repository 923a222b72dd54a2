#include "serve/capture_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace xref::serve {

CaptureFiles::~CaptureFiles() {
  for (const std::string& path : own_) unlink(path.c_str());
  if (!directory_.empty()) rmdir(directory_.c_str());
}

Result<std::string> CaptureFiles::path_for(uint64_t session) {
  std::lock_guard lock(mutex_);
  if (directory_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/xref-serve-" + std::to_string(getpid()) + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return make_error(ErrorCode::internal, "cannot make a directory for the captures (" + pattern + "): " +
                                                 std::strerror(errno),
                        "set TMPDIR to a writable directory, or give --out FILE");
    }
    directory_ = pattern;
  }
  const std::string path = directory_ + "/profile-" + std::to_string(session) + ".xprof";
  own_.push_back(path);
  while (own_.size() > kCaptures) {
    unlink(own_.front().c_str());
    own_.pop_front();
  }
  return path;
}

void CaptureFiles::written(const std::string& path) {
  std::lock_guard lock(mutex_);
  written_.push_back(path);
  while (written_.size() > kCaptures) written_.pop_front();
}

std::vector<std::string> CaptureFiles::latest(size_t count) const {
  std::lock_guard lock(mutex_);
  const size_t first = written_.size() > count ? written_.size() - count : 0;
  return {written_.begin() + static_cast<std::ptrdiff_t>(first), written_.end()};
}

}  // namespace xref::serve
