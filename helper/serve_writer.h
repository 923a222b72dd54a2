// The one writer of protocol lines: whole lines, one at a time, to the
// protocol descriptor, from the main loop and every session thread.
#pragma once

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

namespace xref::serve {

class ProtocolWriter {
 public:
  explicit ProtocolWriter(int fd) : fd_(fd) {}

  // Writes `message` and a '\n'. False once the front end stopped reading
  // (EPIPE and the like); every later write is dropped.
  bool write(const nlohmann::json& message);
  bool broken() const { return broken_; }

 private:
  int fd_;
  std::mutex mutex_;
  std::atomic<bool> broken_{false};
};

}  // namespace xref::serve
