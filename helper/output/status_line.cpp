#include "output/status_line.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "output/output_queue.h"

namespace xref {
namespace {

constexpr char kErase[] = "\r\033[K";  // to the start of the line, cleared to its end
constexpr uint64_t kRateSpanMs = 1000;

// Writes all of `bytes`, waiting when the terminal is full.
void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t written = write(fd, bytes.data() + done, bytes.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    done += static_cast<size_t>(written);
  }
}

}  // namespace

StatusLine::StatusLine(int fd, bool wanted) : fd_(fd) {
  if (!wanted || !isatty(fd)) return;
  // Its own open file description, so the flags the shell shares stay as they are.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  draw_fd_ = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  active_ = draw_fd_ >= 0;
}

StatusLine::~StatusLine() {
  stop();
  if (draw_fd_ >= 0) close(draw_fd_);
}

bool StatusLine::shares_terminal(int other) const {
  if (!active_ || !isatty(other)) return false;
  struct stat mine {}, theirs {};
  return fstat(fd_, &mine) == 0 && fstat(other, &theirs) == 0 && mine.st_rdev == theirs.st_rdev;
}

void StatusLine::show(const std::string& text) {
  if (!active_) return;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || stopped_) return;
  // While another writer holds the terminal, it draws the line when done.
  if (other_writing_) {
    pending_ = text;
    return;
  }
  if (at_line_start_) draw_locked(text);
}

void StatusLine::draw_locked(const std::string& text) {
  // One row: a line wider than the terminal would wrap, and only its last
  // row would be erased.
  winsize size{};
  std::string line = text;
  if (ioctl(fd_, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 && line.size() >= size.ws_col) line.resize(size.ws_col - 1);
  const std::string bytes = kErase + line;
  // Whatever part the terminal took is on the line now, to be erased.
  if (write(draw_fd_, bytes.data(), bytes.size()) > 0) shown_ = true;
}

void StatusLine::erase_locked() {
  if (!shown_) return;
  write_all(fd_, kErase);
  shown_ = false;
}

void StatusLine::print_above(const std::string& line) {
  if (!active_) {
    write_all(fd_, line);
    return;
  }
  std::lock_guard lock(mutex_);
  erase_locked();
  write_all(fd_, line);
  at_line_start_ = line.empty() || line.back() == '\n';
}

void StatusLine::stop() {
  if (!active_) return;
  std::lock_guard lock(mutex_);
  erase_locked();
  stopped_ = true;
}

void StatusLine::begin_output() {
  std::lock_guard lock(mutex_);
  erase_locked();
  other_writing_ = true;
}

void StatusLine::end_output(bool at_line_start) {
  std::lock_guard lock(mutex_);
  other_writing_ = false;
  at_line_start_ = at_line_start;
  if (!pending_.empty() && at_line_start && !stopped_) draw_locked(pending_);
  pending_.clear();
}

void hold_aside_for(StatusLine& status, OutputQueue& output) {
  output.set_write_guard([&status](bool writing, bool at_line_start) {
    if (writing) {
      status.begin_output();
    } else {
      status.end_output(at_line_start);
    }
  });
}

std::string grouped_number(uint64_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

std::string status_seconds(uint64_t elapsed_ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(elapsed_ms) / 1000.0);
  return text;
}

std::string status_stop_text(uint64_t duration_ms, const std::vector<std::string>& bounds) {
  std::vector<std::string> ends;
  if (duration_ms > 0) ends.push_back(status_seconds(duration_ms));
  ends.insert(ends.end(), bounds.begin(), bounds.end());
  if (ends.empty()) return "(Ctrl-C to stop)";
  std::string text = "(stops at ";
  for (size_t i = 0; i < ends.size(); ++i) text += (i == 0 ? "" : ", ") + ends[i];
  return text + " or Ctrl-C)";
}

void RecentRate::add(uint64_t now_ms, uint64_t count) {
  samples_.emplace_back(now_ms, count);
  // Keep the newest sample at least a span old as the base.
  while (samples_.size() > 2 && now_ms - samples_[1].first >= kRateSpanMs) samples_.pop_front();
}

double RecentRate::per_second() const {
  if (samples_.size() < 2) return 0;
  const auto& [first_ms, first_count] = samples_.front();
  const auto& [last_ms, last_count] = samples_.back();
  if (last_ms <= first_ms) return 0;
  return static_cast<double>(last_count - first_count) * 1000.0 / static_cast<double>(last_ms - first_ms);
}

}  // namespace xref
