// What every fuzz target shares: the input as text or as fields, a memory
// file for parsers that take a path, and the checks a target makes on what
// a parser returned. A failed check aborts, which libFuzzer reports as a
// crash with the input that caused it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "result.h"

namespace xref::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The text before the first '\n' and the text after it (empty when there
// is no '\n'): targets whose input is two texts, such as a fetch spec and a
// filter, take one per part.
inline std::pair<std::string_view, std::string_view> split_first_line(std::string_view text) {
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return {text, {}};
  return {text.substr(0, newline), text.substr(newline + 1)};
}

[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz check failed: %s%s%.*s\n", what, detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void require(bool holds, const char* what, std::string_view detail = {}) {
  if (!holds) fail(what, detail);
}

// Parsers report one clear line: a message that is not empty and has no
// line break, and a hint without one either.
inline void require_one_line_error(const Error& error) {
  require(!error.message.empty(), "an error without a message");
  require(error.message.find('\n') == std::string::npos, "an error message of several lines", error.message);
  require(error.hint.find('\n') == std::string::npos, "an error hint of several lines", error.hint);
}

// A parse error of `text` (fetch specs, filters): one clear line,
// invalid_argument, and a column inside the text or just past its end.
inline void require_parse_error(const Error& error, std::string_view text) {
  require_one_line_error(error);
  require(error.code == ErrorCode::invalid_argument, "a parse error is not invalid_argument", error.message);
  require(error.column >= 1 && static_cast<size_t>(error.column) <= text.size() + 1,
          "a parse error's column is outside the text", error.message);
}

// Little-endian fields taken from the front of the input; past its end
// they read as zero, so every input has a meaning.
class FieldReader {
 public:
  FieldReader(const uint8_t* data, size_t size) : bytes_(data, size) {}

  template <typename T>
  T take() {
    T value{};
    const size_t used = std::min(sizeof(T), bytes_.size());
    std::memcpy(&value, bytes_.data(), used);
    bytes_ = bytes_.subspan(used);
    return value;
  }

  std::span<const uint8_t> take_bytes(size_t count) {
    const std::span<const uint8_t> taken = bytes_.first(std::min(count, bytes_.size()));
    bytes_ = bytes_.subspan(taken.size());
    return taken;
  }

  std::span<const uint8_t> rest() const { return bytes_; }

 private:
  std::span<const uint8_t> bytes_;
};

// The input as a file, for parsers that open a path: a memfd, named by its
// /proc/self/fd path, closed when this goes.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("xref-fuzz", MFD_CLOEXEC)) {
    require(fd_ >= 0, "memfd_create", std::strerror(errno));
    for (size_t done = 0; done < size;) {
      const ssize_t wrote = ::write(fd_, data + done, size - done);
      require(wrote > 0, "write to the memfd", std::strerror(errno));
      done += static_cast<size_t>(wrote);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace xref::fuzz
