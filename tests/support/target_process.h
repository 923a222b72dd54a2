// Starts a target program for an end-to-end test, reads the ground truth it
// prints about itself until its "ready" line, and kills it afterwards.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace xref::test {

class TargetProcess {
 public:
  explicit TargetProcess(const std::vector<std::string>& argv) : argv_(argv) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(pipe_fds[1], STDOUT_FILENO);
      std::vector<char*> args;
      for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(pipe_fds[1]);
    output_fd_ = pipe_fds[0];
    read_until_ready();
  }
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;
  ~TargetProcess() {
    stop();
    if (output_fd_ >= 0) close(output_fd_);
  }

  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  const std::vector<std::string>& lines() const { return lines_; }
  // Values of "KEY NAME 0xVALUE" lines, e.g. value("func", "handle_request").
  uint64_t value(const std::string& key, const std::string& name) const {
    auto it = values_.find(key + " " + name);
    if (it == values_.end()) throw std::runtime_error("target did not print " + key + " " + name);
    return it->second;
  }
  // Values of "KEY 0xVALUE" lines.
  uint64_t value(const std::string& key) const { return value(key, ""); }
  const std::map<std::string, uint64_t>& values() const { return values_; }

  // Waits for the target to exit by itself; its wait status.
  int wait_exit() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    return status;
  }

  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  void read_until_ready() {
    std::string pending;
    char buffer[4096];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const ssize_t count = read(output_fd_, buffer, sizeof buffer);
      if (count <= 0) break;
      pending.append(buffer, static_cast<size_t>(count));
      size_t newline;
      while ((newline = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, newline);
        pending.erase(0, newline + 1);
        if (line == "ready") return;
        parse(line);
      }
    }
    throw std::runtime_error("target did not print 'ready'");
  }

  void parse(const std::string& line) {
    lines_.push_back(line);
    std::vector<std::string> words;
    size_t start = 0;
    while (start < line.size()) {
      size_t end = line.find(' ', start);
      if (end == std::string::npos) end = line.size();
      if (end > start) words.push_back(line.substr(start, end - start));
      start = end + 1;
    }
    if (words.size() == 3 && words[2].rfind("0x", 0) == 0) {
      values_[words[0] + " " + words[1]] = std::stoull(words[2], nullptr, 16);
    } else if (words.size() == 2 && words[1].rfind("0x", 0) == 0) {
      values_[words[0] + " "] = std::stoull(words[1], nullptr, 16);
    }
  }

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int output_fd_ = -1;
  std::vector<std::string> lines_;
  std::map<std::string, uint64_t> values_;
};

}  // namespace xref::test
