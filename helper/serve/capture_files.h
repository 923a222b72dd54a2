// The capture files of a helper's profile sessions: a directory of its own
// (mode 0700, under $TMPDIR or /tmp, made at the first capture), the
// newest kCaptures files in it (older ones are removed), and the path of
// each capture a session wrote, its own or an --out, for `xref profile
// report|annotate|diff` without a file. The directory goes with the helper.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "result.h"

namespace xref::serve {

class CaptureFiles {
 public:
  static constexpr size_t kCaptures = 16;

  CaptureFiles() = default;
  ~CaptureFiles();
  CaptureFiles(const CaptureFiles&) = delete;
  CaptureFiles& operator=(const CaptureFiles&) = delete;

  // A new file in the helper's directory for session `session`.
  Result<std::string> path_for(uint64_t session);
  // A session wrote its capture at `path`.
  void written(const std::string& path);
  // The paths of the last `count` captures written, oldest first.
  std::vector<std::string> latest(size_t count) const;

 private:
  mutable std::mutex mutex_;
  std::string directory_;
  std::deque<std::string> own_;      // files made in directory_, oldest first
  std::deque<std::string> written_;  // every capture written, oldest first (kCaptures kept)
};

}  // namespace xref::serve
