#include "mark/follower.h"
#include "input/user_files.h"
#include "mark/log_filesystem.h"
#include "monotonic_clock.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace xref {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

const char* mark_status_name(MarkStamp::Status status) {
  switch (status) {
    case MarkStamp::Status::matched: return "matched";
    case MarkStamp::Status::no_match_yet: return "no_match_yet";
    case MarkStamp::Status::unreadable: return "unreadable";
    case MarkStamp::Status::evicted: return "evicted";
  }
  return "unknown";
}

Result<void> check_mark_options(const std::string& mark_file, const std::string& mark_regex) {
  if (mark_file.empty() != mark_regex.empty()) {
    return make_error(ErrorCode::invalid_argument, "--mark-file and --mark-regex go together",
                      "e.g. --mark-file /var/log/app.log --mark-regex 'batch ([0-9]+)'");
  }
  if (!mark_regex.empty()) {
    if (auto regex = MarkRegex::compile(mark_regex); !regex) return regex.error();
  }
  return {};
}

Result<std::unique_ptr<MarkFollower>> follow_marks(const std::string& mark_file, const std::string& mark_regex) {
  constexpr unsigned kMarkPollMs = 10;  // how often the file is read
  if (mark_file.empty()) return std::unique_ptr<MarkFollower>();
  auto regex = MarkRegex::compile(mark_regex);
  if (!regex) return regex.error();
  if (auto followable = MarkFollower::check(mark_file); !followable) return followable.error();
  // Exact line times need the write clock (BPF); without it a mark that was
  // read only after what it stamps began is shown uncertain.
  auto clock = MarkWriteClock::start();
  auto follower = MarkFollower::open(mark_file, std::move(*regex), {}, clock ? std::move(*clock) : nullptr);
  if (!follower) return follower.error();
  if (!clock) (*follower)->set_untimed_reason(clock.error().message);
  (*follower)->start_polling(kMarkPollMs);
  return std::move(*follower);
}

void add_mark_json(nlohmann::json& object, const MarkStamp& stamp) {
  const bool matched = stamp.status == MarkStamp::Status::matched;
  object["mark"] = matched ? nlohmann::json(stamp.line->text) : nlohmann::json(nullptr);
  object["mark_match"] = matched ? nlohmann::json(stamp.line->match) : nlohmann::json(nullptr);
  object["mark_status"] = mark_status_name(stamp.status);
  object["mark_certain"] = matched && stamp.certain;
  if (stamp.status == MarkStamp::Status::unreadable) object["mark_error"] = stamp.error;
}

Result<std::unique_ptr<MarkFollower>> MarkFollower::open(const std::string& path, MarkRegex regex,
                                                         MarkFollowerLimits limits,
                                                         std::unique_ptr<MarkWriteClock> clock) {
  std::unique_ptr<MarkFollower> follower(new MarkFollower(path, std::move(regex), limits));
  follower->clock_ = std::move(clock);
  // With the user's rights under sudo: a root-only file is refused.
  auto file = open_file(path);
  if (!file) return file.error();
  follower->dev_ = file->identity.dev;
  follower->ino_ = file->identity.ino;
  follower->fd_ = file->fd.release();
  if (follower->clock_) {
    follower->clock_->watch(follower->dev_, follower->ino_);
    follower->clock_->watch_path(path);
  }
  const uint64_t size = file->size;
  if (size > limits.initial_tail) {
    // Start at a line boundary inside the tail: the line cut there is dropped.
    follower->offset_ = size - limits.initial_tail;
    std::vector<char> chunk(64u << 10);
    while (follower->offset_ < size) {
      // From the byte before the offset: the offset may already start a line.
      const ssize_t got = pread(follower->fd_, chunk.data(), chunk.size(), static_cast<off_t>(follower->offset_ - 1));
      if (got <= 0) break;
      const void* newline = std::memchr(chunk.data(), '\n', static_cast<size_t>(got));
      if (newline != nullptr) {
        follower->offset_ += static_cast<uint64_t>(static_cast<const char*>(newline) - chunk.data());
        break;
      }
      follower->offset_ += static_cast<uint64_t>(got);
    }
    follower->offset_ = std::min(follower->offset_, size);
  }
  // What the file holds now was written before the trace: written_after 0.
  const uint64_t started = monotonic_ns();
  size_t budget = limits.initial_tail + limits.max_line;
  // Lines past a read that stopped short may be older than `started`.
  if (follower->read_available(budget, 0)) follower->written_after_ns_ = started;
  return follower;
}

Result<InputFile> MarkFollower::open_file(const std::string& path) {
  // Never blocks: a FIFO is refused, not waited on for a writer.
  auto file = open_regular_file(path, "--mark-file");
  if (file) {
    if (auto log = check_log_filesystem(file->fd.get(), path); !log) return log.error();
    return file;
  }
  Error error = file.error();
  // A file the sudo user may not read keeps permission_denied and its hint.
  if (error.code == ErrorCode::permission_denied) return error;
  error.code = ErrorCode::invalid_argument;
  error.hint = error.message.find("not a regular file") == std::string::npos
                   ? "give a log file this user can read; it must exist when the trace starts"
                   : "give the log file itself; pipes and devices cannot be followed";
  return error;
}

Result<void> MarkFollower::check(const std::string& path) {
  auto file = open_file(path);
  if (!file) return file.error();
  return {};
}

MarkFollower::~MarkFollower() {
  {
    std::lock_guard lock(wait_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (fd_ >= 0) ::close(fd_);
}

void MarkFollower::start_polling(unsigned interval_ms) {
  poller_ = std::thread([this, interval_ms] {
    std::unique_lock lock(wait_mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(interval_ms), [this] { return stopping_; })) {
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

void MarkFollower::poll() {
  std::lock_guard lock(mutex_);
  poll_locked();
}

void MarkFollower::fail(const std::string& why, uint64_t now_ns) {
  if (!error_.empty()) return;
  error_ = why;
  failed_ns_ = now_ns;
}

void MarkFollower::take_line(std::string line, uint64_t written_after_ns, uint64_t read_ns, uint64_t last_byte) {
  if (line.size() > limits_.max_line) line.resize(limits_.max_line);
  auto match = regex_.match(line);
  if (!match) return;
  MarkLine taken{std::move(line), std::move(*match), written_after_ns, read_ns};
  taken.dev = dev_;
  taken.ino = ino_;
  taken.last_byte = last_byte;
  history_.push_back(std::move(taken));
  if (history_.size() > limits_.history) {
    history_.pop_front();
    history_dropped_ = true;
  }
}

bool MarkFollower::read_available(size_t& budget, uint64_t written_after_ns) {
  std::vector<char> buffer(64u << 10);
  while (budget > 0) {
    const size_t want = std::min(buffer.size(), budget);
    const ssize_t got = pread(fd_, buffer.data(), want, static_cast<off_t>(offset_));
    // Whatever this read returned was in the file by now.
    const uint64_t read_ns = monotonic_ns();
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("read " + path_ + ": " + errno_text(errno), read_ns);
      return false;
    }
    if (got == 0) return true;
    const uint64_t chunk_offset = offset_;
    offset_ += static_cast<uint64_t>(got);
    budget -= static_cast<size_t>(got);
    const char* begin = buffer.data();
    const char* end = begin + got;
    while (begin < end) {
      const char* newline = static_cast<const char*>(std::memchr(begin, '\n', static_cast<size_t>(end - begin)));
      if (!newline) {
        // Keep at most max_line bytes of an unfinished line; the rest is cut.
        const size_t room = limits_.max_line + 1 > partial_.size() ? limits_.max_line + 1 - partial_.size() : 0;
        partial_.append(begin, std::min(room, static_cast<size_t>(end - begin)));
        break;
      }
      const uint64_t newline_offset = chunk_offset + static_cast<uint64_t>(newline - buffer.data());
      if (partial_.empty()) {
        take_line(std::string(begin, newline), written_after_ns, read_ns, newline_offset);
      } else {
        partial_.append(begin, std::min(static_cast<size_t>(newline - begin), limits_.max_line + 1));
        take_line(std::move(partial_), written_after_ns, read_ns, newline_offset);
        partial_.clear();
      }
      begin = newline + 1;
    }
  }
  return false;
}

void MarkFollower::poll_locked() {
  if (!error_.empty()) return;
  const uint64_t started = monotonic_ns();
  struct stat status {};
  if (fstat(fd_, &status) != 0) return fail("stat " + path_ + ": " + errno_text(errno), started);
  if (static_cast<uint64_t>(status.st_size) < offset_) {
    // Truncated (copytruncate rotation, or `> file`): what is there now is new.
    offset_ = 0;
    partial_.clear();
  }
  size_t budget = limits_.read_per_poll;
  if (!read_available(budget, written_after_ns_)) return;  // more to read, or failed

  // At the end of the file: does the path still name it? (Asked with the
  // user's rights: a rotation may leave a symlink to a root-only file.)
  auto now_named = stat_user_file(path_);
  if (!now_named) return fail("stat " + now_named.error().message, started);
  if (!*now_named) {
    // Renamed away and not created again yet: keep following the old file.
    written_after_ns_ = started;
    return;
  }
  struct stat named = **now_named;
  if (named.st_dev == dev_ && named.st_ino == ino_) {
    written_after_ns_ = started;
    return;
  }
  // Rotated: the old file has been read to its end; its last line, if it
  // has no newline, is complete now. Follow the new file from its start.
  if (!partial_.empty()) {
    take_line(std::move(partial_), written_after_ns_, monotonic_ns(), offset_ - 1);
    partial_.clear();
  }
  // The path may name anything now: a FIFO in its place must not block the
  // poll, and a root-only file is not opened under sudo.
  auto file = open_regular_file(path_, "");
  if (!file) return fail("after rotation, " + file.error().message, started);
  if (auto log = check_log_filesystem(file->fd.get(), path_); !log) {
    return fail("after rotation, " + log.error().message, started);
  }
  named.st_dev = file->identity.dev;
  named.st_ino = file->identity.ino;
  const int fd = file->fd.release();
  ::close(fd_);
  if (clock_) {
    clock_->watch(named.st_dev, named.st_ino);
    clock_->drain();  // the old file's last writes, before its records are dropped
    for (auto line = history_.rbegin(); line != history_.rend() && line->ino == ino_ && line->dev == dev_; ++line) {
      resolve(*line);
    }
    clock_->unwatch(dev_, ino_);
  }
  fd_ = fd;
  dev_ = named.st_dev;
  ino_ = named.st_ino;
  offset_ = 0;
  // The new file's lines were written after the rename, which came after the
  // last poll that saw the old name: written_after_ns_ stays as it is.
  budget = limits_.read_per_poll;
  if (read_available(budget, written_after_ns_)) written_after_ns_ = started;
}

void MarkFollower::resolve(MarkLine& line) const {
  if (!clock_ || line.timed || line.written_after_ns == 0) return;
  if (auto written = clock_->written_at(line.dev, line.ino, line.last_byte)) {
    line.written_after_ns = *written;
    line.read_by_ns = *written;
    line.timed = true;
  }
}

MarkStamp MarkFollower::stamp(uint64_t opened_ns) {
  std::lock_guard lock(mutex_);
  poll_locked();
  // Taken after the poll: a write's record can come a moment after its
  // bytes were read.
  if (clock_) clock_->drain();
  MarkStamp stamp;
  if (!error_.empty() && failed_ns_ <= opened_ns) {
    stamp.status = MarkStamp::Status::unreadable;
    stamp.error = error_;
    return stamp;
  }
  // The last line, in file order, that could have been written before the
  // window opened.
  for (auto line = history_.rbegin(); line != history_.rend(); ++line) {
    resolve(*line);
    if (line->written_after_ns >= opened_ns) continue;
    stamp.status = MarkStamp::Status::matched;
    stamp.line = *line;
    stamp.certain = line->read_by_ns <= opened_ns;
    return stamp;
  }
  stamp.status = history_dropped_ ? MarkStamp::Status::evicted : MarkStamp::Status::no_match_yet;
  return stamp;
}

}  // namespace xref
