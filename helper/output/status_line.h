// The live status line of a command that runs until a bound or Ctrl-C
// (trace, probe; docs/cli.md, "The status line"): one line on stderr,
// rewritten in place (`\r`, the text, clear to the end of the line) a few
// times a second, erased before any other line reaches that terminal and
// at the end, so what stays on the screen is what a file would hold. It
// exists only where stderr is a terminal.
//
// Two threads write to a terminal at once when stdout is that terminal
// too: the command (this line) and the output queue's writer (windows,
// heartbeats). The writer holds the line aside while it writes
// (begin_output/end_output) and draws the newest line when it is done; the
// command never waits for it.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace xref {

class StatusLine {
 public:
  // Shown only when `wanted` and `fd` (stderr) is a terminal.
  StatusLine(int fd, bool wanted);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  bool active() const { return active_; }
  // Whether `other` (stdout) writes to this same terminal: its writer must
  // then hold the line aside.
  bool shares_terminal(int other) const;

  // `text` in place of the line shown, cut to the terminal's width. Never
  // waits: while another writer holds the terminal, that writer draws it
  // when done; a terminal that takes nothing now skips it.
  void show(const std::string& text);
  // Erases the line, then writes `line` (which ends with '\n') to the
  // terminal: a message of the command's own between two draws.
  void print_above(const std::string& line);
  // Erases the line for good; show() draws nothing after it.
  void stop();

  // Around another writer's bytes to the same terminal: the line is erased
  // first, and drawn again after them (the newest text shown meanwhile)
  // once the cursor is back at the start of a line (`at_line_start`: the
  // bytes ended with '\n').
  void begin_output();
  void end_output(bool at_line_start);

 private:
  void erase_locked();                        // mutex_ held
  void draw_locked(const std::string& text);  // mutex_ held

  const int fd_;
  int draw_fd_ = -1;  // the same terminal, non-blocking: a draw never waits
  bool active_ = false;
  std::mutex mutex_;
  bool shown_ = false;          // text of ours is on the terminal's last line
  bool other_writing_ = false;  // another writer holds the terminal
  bool at_line_start_ = true;   // the cursor is at the start of an empty line
  bool stopped_ = false;
  std::string pending_;  // a line to draw once the other writer is done
};

// Lets the writer of `output` (stdout on the same terminal) hold the
// line aside while it writes; before anything is pushed to it.
class OutputQueue;
void hold_aside_for(StatusLine& status, OutputQueue& output);

// How often a shown status line is drawn again.
constexpr uint64_t kStatusPeriodMs = 250;

// How a status line spells its numbers: 3,201 and 12.4 s.
std::string grouped_number(uint64_t value);
std::string status_seconds(uint64_t elapsed_ms);

// What ends the run, as the status line ends: "(Ctrl-C to stop)", or
// "(stops at 30.0 s, 100 windows or Ctrl-C)". `bounds`: the command's
// other bounds in words ("100 windows"); `duration_ms` 0: none.
std::string status_stop_text(uint64_t duration_ms, const std::vector<std::string>& bounds);

// A count's rate per second over about the last second, from the samples
// given (time since the start, count so far; at 0 the count was 0), for a
// status line that follows bursts.
class RecentRate {
 public:
  RecentRate() : samples_{{0, 0}} {}
  void add(uint64_t now_ms, uint64_t count);
  double per_second() const;

 private:
  std::deque<std::pair<uint64_t, uint64_t>> samples_;
};

}  // namespace xref
