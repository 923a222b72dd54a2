// --mark-file PATH --mark-regex RE: a log followed while a trace runs, so
// each window can be stamped with the latest matching line at the moment it
// opened (a batch height, a request number: a position in the input).
//
// The file is read by polling: a bounded read per poll, from where the last
// one stopped. Each matching line keeps the interval it was written in:
// exactly the time the write of its newline returned when the write clock
// (MarkWriteClock, BPF) saw that write; else after the start of the last
// poll that had read the whole file (and found the path still naming it)
// and before the poll that read it ended. A window opened at T is stamped
// with the latest matching line that could have been written before T; the
// stamp is `certain` when that line was surely written before T.
//
// Rotation (the path names a new file: the old one is read to its end
// first) and truncation (the file got shorter: read again from 0) are
// followed. Times are CLOCK_MONOTONIC, the clock of the window timestamps.
// The file, at start and after a rotation, is opened through input_file.h:
// regular files only, never blocking, with the sudo user's rights under sudo
// (a log rotated into a symlink to a root-only file is not followed).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "input/input_file.h"
#include "mark/regex.h"
#include "mark/write_clock.h"
#include "result.h"

namespace xref {

struct MarkLine {
  std::string text;            // the whole line, without its newline
  std::string match;           // the regex's first group if it has one, else the whole match
  uint64_t written_after_ns = 0;  // 0: already in the file when following began
  uint64_t read_by_ns = 0;        // written by then
  bool timed = false;             // both are the write's exact return time
  dev_t dev = 0;                  // where its last byte is: file and offset
  ino_t ino = 0;
  uint64_t last_byte = 0;
};

struct MarkStamp {
  // evicted: more matching lines came after the window opened than are kept.
  enum class Status { matched, no_match_yet, unreadable, evicted };
  Status status = Status::no_match_yet;
  std::optional<MarkLine> line;  // matched only
  bool certain = false;          // matched: the line was read before the window opened
  std::string error;             // unreadable: why
};

const char* mark_status_name(MarkStamp::Status status);
// Adds a stamp to the JSON object it stamps (a window, a detail record):
// mark, mark_match, mark_status, mark_certain and, when unreadable, mark_error.
void add_mark_json(nlohmann::json& object, const MarkStamp& stamp);

struct MarkFollowerLimits {
  size_t read_per_poll = 1u << 20;   // bytes read at most in one poll
  size_t initial_tail = 4u << 20;    // of a file that is already bigger, only its end is read
  size_t max_line = 64u << 10;       // longer lines are cut here before matching
  size_t history = 65536;            // matching lines kept
};

class MarkFollower {
 public:
  // Opens `path` and reads what it already holds (its last initial_tail
  // bytes). invalid_argument when it cannot be read.
  // `clock` may be null (no BPF): then lines keep their poll bounds.
  static Result<std::unique_ptr<MarkFollower>> open(const std::string& path, MarkRegex regex,
                                                    MarkFollowerLimits limits = {},
                                                    std::unique_ptr<MarkWriteClock> clock = nullptr);
  // open()'s refusal of a file that cannot be followed (missing,
  // unreadable, not a regular file), without reading it: for a check
  // before anything is attached.
  static Result<void> check(const std::string& path);
  ~MarkFollower();
  MarkFollower(const MarkFollower&) = delete;
  MarkFollower& operator=(const MarkFollower&) = delete;

  // One bounded read (tests drive it directly).
  void poll();
  // Polls every `interval_ms` on a thread of its own until destroyed.
  void start_polling(unsigned interval_ms);
  // The stamp of a window opened at `opened_ns` (CLOCK_MONOTONIC). Polls
  // first, so every line written before the call is considered.
  MarkStamp stamp(uint64_t opened_ns);

  const std::string& path() const { return path_; }
  // "write_clock" when line times come from the BPF write clock, else
  // "poll" (untimed_reason() says why).
  std::string clock_name() const { return clock_ ? "write_clock" : "poll"; }
  void set_untimed_reason(std::string reason) { untimed_reason_ = std::move(reason); }
  const std::string& untimed_reason() const { return untimed_reason_; }

 private:
  MarkFollower(std::string path, MarkRegex regex, MarkFollowerLimits limits)
      : path_(std::move(path)), regex_(std::move(regex)), limits_(limits) {}
  static Result<InputFile> open_file(const std::string& path);
  void poll_locked();
  // Reads from fd_ at offset_ up to `budget` bytes; true when it reached the end.
  bool read_available(size_t& budget, uint64_t written_after_ns);
  void take_line(std::string line, uint64_t written_after_ns, uint64_t read_ns, uint64_t last_byte);
  // Gives the line its exact write time if the clock has seen that write.
  void resolve(MarkLine& line) const;
  void fail(const std::string& why, uint64_t now_ns);

  const std::string path_;
  const MarkRegex regex_;
  const MarkFollowerLimits limits_;
  std::unique_ptr<MarkWriteClock> clock_;
  std::string untimed_reason_;

  std::mutex mutex_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t offset_ = 0;
  std::string partial_;             // the start of a line whose newline has not been written yet
  uint64_t written_after_ns_ = 0;   // lines read from now on were written after this
  std::deque<MarkLine> history_;    // matching lines, oldest first
  bool history_dropped_ = false;    // older matching lines fell out of history_
  std::string error_;               // set once the file cannot be followed any more
  uint64_t failed_ns_ = 0;

  std::mutex wait_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread poller_;
};

// --mark-file and --mark-regex as a command gets them: both or neither,
// and a regex RE2 takes (checked before anything is attached).
Result<void> check_mark_options(const std::string& mark_file, const std::string& mark_regex);

// The follower of `mark_file`, polling already, with the write clock when
// BPF allows it (else its lines are timed by the polls, and it says why);
// null without a mark file. A file that cannot be followed is refused
// before the clock's host-wide programs attach.
Result<std::unique_ptr<MarkFollower>> follow_marks(const std::string& mark_file, const std::string& mark_regex);

}  // namespace xref
