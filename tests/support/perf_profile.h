// perf (Debian's linux-perf) as the profile tests' peer: `perf record -e
// cpu-clock -F HZ --call-graph dwarf|fp -p PID -- sleep SECONDS` on a live
// process, then `perf script` read into samples with their stacks of
// function names (the kernel's frames collapsed into one `[kernel]`), and
// from those: folded stacks (folded_stacks.h), function self and total
// shares.
//
// perf's dwarf mode copies 8 KB of user stack per sample (its default dump
// size) and unwinds afterwards: a stack deeper than the copy ends early, at
// whatever frame the copy ran out in, so tests also count the stacks that
// reach the process's roots (profile_harness.h, complete_percent).
//
// Errors (perf missing, perf failing) throw std::runtime_error with perf's
// own message.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command_output.h"
#include "folded_stacks.h"

namespace xref::test::perf {

struct Frame {
  std::string function;  // perf's symbol without its version (`clock_gettime`, not `clock_gettime@@GLIBC_2.17`)
  std::string module;    // the file name of perf's dso (`libc.so.6`), `[kernel]`, `[vdso]`
  uint64_t address = 0;  // as perf prints it: for a file's code, its offset in the file (not its ELF address
                         // in a non-PIE executable: profile_harness.h's static_va converts)
};

struct Sample {
  std::string comm;
  int pid = 0, tid = 0;
  uint64_t period = 0;        // ns of CPU for cpu-clock
  std::vector<Frame> frames;  // root first, leaf last; the kernel's frames are one `[kernel]` frame
  // The innermost frame outside the kernel (the "self" function of the
  // user-space code); nullptr for a stack with no user frame.
  const Frame* user_leaf() const {
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
      if (frame->module != "[kernel]") return &*frame;
    }
    return nullptr;
  }
  bool contains(const std::string& function) const {
    for (const auto& frame : frames) {
      if (frame.function == function) return true;
    }
    return false;
  }
};

// Drops perf's symbol version suffix (`@@GLIBC_2.17`, `@GLIBC_2.2.5`).
inline std::string plain_symbol(const std::string& symbol) {
  if (symbol.empty() || symbol[0] == '[') return symbol;
  const size_t at = symbol.find('@');
  return at == std::string::npos || at == 0 ? symbol : symbol.substr(0, at);
}

// `perf script -F comm,pid,tid,period,event,ip,sym,dso` output -> samples.
// A sample: a header line `COMM PID/TID PERIOD EVENT:` (COMM may hold
// spaces), then one line per frame, leaf first, `\tADDR SYMBOL (DSO)`, then
// an empty line.
inline std::vector<Sample> parse_script(const std::string& text) {
  static const std::regex header(R"(^(.*\S)\s+(\d+)/(\d+)\s+(\d+)\s+\S+:\s*$)");
  static const std::regex frame_line(R"(^\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$)");
  std::vector<Sample> samples;
  Sample* current = nullptr;
  std::istringstream lines(text);
  std::string line;
  auto finish = [&] {
    if (current != nullptr) std::reverse(current->frames.begin(), current->frames.end());
    current = nullptr;
  };
  std::smatch match;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) {
      finish();
    } else if (line[0] != ' ' && line[0] != '\t') {
      finish();
      if (!std::regex_match(line, match, header)) throw std::runtime_error("perf script: not a sample header: " + line);
      samples.push_back({match[1], std::stoi(match[2]), std::stoi(match[3]), std::stoull(match[4]), {}});
      current = &samples.back();
    } else {
      if (current == nullptr || !std::regex_match(line, match, frame_line)) {
        throw std::runtime_error("perf script: not a frame line: " + line);
      }
      const std::string dso = match[3];
      Frame frame{plain_symbol(match[2]), dso.substr(dso.rfind('/') + 1), std::stoull(match[1], nullptr, 16)};
      if (dso.rfind("[kernel", 0) == 0 || dso.rfind("[guest.kernel", 0) == 0) frame = {"[kernel]", "[kernel]", 0};
      // leaf first here: a run of kernel frames becomes one
      if (frame.module == "[kernel]" && !current->frames.empty() && current->frames.back().module == "[kernel]") {
        continue;
      }
      current->frames.push_back(frame);
    }
  }
  finish();
  return samples;
}

// The samples' stacks folded (function names, root first), each stack
// counted once per sample.
inline folded::Stacks fold(const std::vector<Sample>& samples) {
  folded::Stacks stacks;
  for (const auto& sample : samples) {
    std::string stack;
    for (const auto& frame : sample.frames) stack += (stack.empty() ? "" : ";") + frame.function;
    if (!stack.empty()) stacks[stack] += 1;
  }
  return stacks;
}

struct FunctionShare {
  double self = 0;   // percent of samples whose user leaf is the function
  double total = 0;  // percent of samples with the function anywhere in the stack
};

inline std::map<std::string, FunctionShare> function_shares(const std::vector<Sample>& samples) {
  std::map<std::string, FunctionShare> shares;
  if (samples.empty()) return shares;
  const double unit = 100.0 / static_cast<double>(samples.size());
  for (const auto& sample : samples) {
    std::set<std::string> seen;
    for (const auto& frame : sample.frames) {
      if (seen.insert(frame.function).second) shares[frame.function].total += unit;
    }
    if (const Frame* leaf = sample.user_leaf()) shares[leaf->function].self += unit;
  }
  return shares;
}

// Can this process sample another with cpu-clock (perf_event_open works,
// perf is installed)? why: what is missing.
inline bool available(std::string& why) {
  if (access("/usr/bin/perf", X_OK) != 0) {
    why = "/usr/bin/perf (the Debian package linux-perf, scripts/install-deps.sh)";
    return false;
  }
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    why = "perf events (perf_event_open of cpu-clock failed: run as root, kernel.perf_event_paranoid)";
    return false;
  }
  close(fd);
  return true;
}

struct RecordOptions {
  int pid = 0;
  double seconds = 5;
  unsigned frequency = 99;
  std::string call_graph = "dwarf";  // dwarf | fp
  std::string event = "cpu-clock";
};

// What a recording cost, for the benchmark: wall and CPU seconds of perf
// record (over the interval) and of perf script (afterwards).
struct Cost {
  double record_wall = 0, record_cpu = 0, script_wall = 0, script_cpu = 0;
  uint64_t data_bytes = 0;
};

struct Recording {
  std::vector<Sample> samples;
  Cost cost;
  // Only the samples of these threads.
  std::vector<Sample> of_threads(const std::set<int>& tids) const {
    std::vector<Sample> kept;
    for (const auto& sample : samples) {
      if (tids.count(sample.tid) != 0) kept.push_back(sample);
    }
    return kept;
  }
};

namespace detail {

// Runs ARGV to its end, its stdout into OUTPUT_PATH and its stderr into
// ERROR_PATH; wall and CPU seconds (the child's user + system).
inline int run_timed(const std::vector<std::string>& argv, const std::string& output_path,
                     const std::string& error_path, double& wall, double& cpu) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    const int out = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int err = open(error_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (child < 0) throw std::runtime_error("fork failed");
  int status = 0;
  rusage usage{};
  if (wait4(child, &status, 0, &usage) != child) throw std::runtime_error("wait4 failed");
  wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace detail

// Records the process for options.seconds and reads the samples back.
// work_path: a path prefix for perf's files (PREFIX.data, .out, .err),
// removed afterwards.
inline Recording record(const RecordOptions& options, const std::string& work_path) {
  const std::string data = work_path + ".data", out = work_path + ".out", err = work_path + ".err";
  auto clean = [&] {
    for (const auto& path : {data, out, err}) unlink(path.c_str());
  };
  const std::vector<std::string> record_argv = {
      "/usr/bin/perf", "record", "-q", "-e", options.event, "-F", std::to_string(options.frequency),
      "--call-graph", options.call_graph, "-p", std::to_string(options.pid), "-o", data, "--",
      "/bin/sleep", std::to_string(options.seconds)};
  const std::vector<std::string> script_argv = {"/usr/bin/perf", "script", "-i", data, "--no-inline", "-F",
                                                "comm,pid,tid,period,event,ip,sym,dso"};
  Recording recording;
  Cost& cost = recording.cost;
  if (detail::run_timed(record_argv, out, err, cost.record_wall, cost.record_cpu) != 0) {
    const std::string message = detail::read_text(err);
    clean();
    throw std::runtime_error("perf record failed: " + message);
  }
  std::ifstream size_probe(data, std::ios::binary | std::ios::ate);
  cost.data_bytes = size_probe ? static_cast<uint64_t>(size_probe.tellg()) : 0;
  const int status = detail::run_timed(script_argv, out, err, cost.script_wall, cost.script_cpu);
  const std::string text = detail::read_text(out), message = detail::read_text(err);
  clean();
  if (status != 0) throw std::runtime_error("perf script failed: " + message);
  recording.samples = parse_script(text);
  return recording;
}

}  // namespace xref::test::perf
