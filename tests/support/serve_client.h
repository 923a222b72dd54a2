// Drives `xref serve` over pipes the way a debugger front end does: JSON
// lines in, JSON lines out. Reads block; the test runner's timeout is the
// only clock.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace xref::test {

class ServeClient {
 public:
  // `environment`: extra NAME=VALUE settings for the helper (e.g. SUDO_UID);
  // `arguments`: words after `serve` (e.g. --max-sessions 3); `runner`: a
  // command that runs the helper (e.g. setpriv, to run it as another user).
  explicit ServeClient(const std::vector<std::string>& environment = {},
                       const std::vector<std::string>& arguments = {},
                       const std::vector<std::string>& runner = {}) {
    int to_helper[2], from_helper[2];
    if (pipe2(to_helper, O_CLOEXEC) != 0 || pipe2(from_helper, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    char err_path[] = "/tmp/xref-serve-stderr-XXXXXX";
    const int err_fd = mkstemp(err_path);
    err_path_ = err_path;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_helper[0], STDIN_FILENO);
      dup2(from_helper[1], STDOUT_FILENO);
      dup2(err_fd, STDERR_FILENO);
      for (const auto& setting : environment) putenv(const_cast<char*>(setting.c_str()));
      std::vector<char*> argv;
      for (const auto& word : runner) argv.push_back(const_cast<char*>(word.c_str()));
      argv.push_back(const_cast<char*>(XREF_BINARY));
      argv.push_back(const_cast<char*>("serve"));
      for (const auto& word : arguments) argv.push_back(const_cast<char*>(word.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(err_fd);
    close(to_helper[0]);
    close(from_helper[1]);
    in_ = to_helper[1];
    out_ = from_helper[0];
  }
  ServeClient(const ServeClient&) = delete;
  ServeClient& operator=(const ServeClient&) = delete;
  ~ServeClient() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (in_ >= 0) close(in_);
    if (out_ >= 0) close(out_);
    unlink(err_path_.c_str());
  }

  pid_t pid() const { return pid_; }

  void send_raw(const std::string& bytes) {
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t count = write(in_, bytes.data() + written, bytes.size() - written);
      if (count <= 0) throw std::runtime_error("xref serve stopped reading");
      written += static_cast<size_t>(count);
    }
  }
  void send(const nlohmann::json& message) { send_raw(message.dump() + "\n"); }

  // Like a front end whose helper stopped reading: a line of at most
  // PIPE_BUF bytes is written whole or not at all (false: the pipe is full).
  bool try_send_raw(const std::string& line) {
    if (!(fcntl(in_, F_GETFL) & O_NONBLOCK)) fcntl(in_, F_SETFL, fcntl(in_, F_GETFL) | O_NONBLOCK);
    const ssize_t count = write(in_, line.data(), line.size());
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (count != static_cast<ssize_t>(line.size())) throw std::runtime_error("xref serve stopped reading");
    return true;
  }

  // The next line the helper wrote; every line must be a JSON object.
  nlohmann::json read() {
    if (!pending_.empty()) {
      nlohmann::json message = std::move(pending_.front());
      pending_.pop_front();
      return message;
    }
    return read_line();
  }

  // Sends a request and returns its response; events read meanwhile stay queued.
  nlohmann::json request(const std::string& method, const nlohmann::json& params = nlohmann::json::object()) {
    const int id = next_id_++;
    send({{"id", id}, {"method", method}, {"params", params}});
    return await([id](const nlohmann::json& message) { return message.contains("id") && message["id"] == id; });
  }

  // The first message (queued or new) that matches; the others stay queued.
  nlohmann::json await(const std::function<bool(const nlohmann::json&)>& wanted) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (wanted(*it)) {
        nlohmann::json message = std::move(*it);
        pending_.erase(it);
        return message;
      }
    }
    for (;;) {
      nlohmann::json message = read_line();
      if (wanted(message)) return message;
      pending_.push_back(std::move(message));
    }
  }

  nlohmann::json await_event(const std::string& event, uint64_t session) {
    return await([&](const nlohmann::json& message) {
      return message.value("type", "") == "event" && message["event"] == event && message["session"] == session;
    });
  }

  // Whether a message that matches was read and is still queued (it came
  // before whatever was awaited since).
  bool queued(const std::function<bool(const nlohmann::json&)>& wanted) const {
    for (const auto& message : pending_) {
      if (wanted(message)) return true;
    }
    return false;
  }

  // Takes every queued message that matches, in the order they came.
  std::vector<nlohmann::json> take_queued(const std::function<bool(const nlohmann::json&)>& wanted) {
    std::vector<nlohmann::json> taken;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (wanted(*it)) {
        taken.push_back(*it);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    return taken;
  }

  // Every message until the helper closes its stdout.
  std::vector<nlohmann::json> read_to_end() {
    std::vector<nlohmann::json> messages(pending_.begin(), pending_.end());
    pending_.clear();
    for (;;) {
      std::string line;
      if (!next_line(line)) return messages;
      messages.push_back(nlohmann::json::parse(line));
    }
  }

  void close_stdin() {
    close(in_);
    in_ = -1;
  }

  // Waits for the helper to exit; its exit status, or -signal.
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  std::string stderr_text() const {
    std::string text;
    if (FILE* file = fopen(err_path_.c_str(), "r")) {
      char buffer[4096];
      size_t count;
      while ((count = fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, count);
      fclose(file);
    }
    return text;
  }

 private:
  bool next_line(std::string& line) {
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      char chunk[65536];
      const ssize_t count = ::read(out_, chunk, sizeof chunk);
      if (count <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(count));
    }
  }

  nlohmann::json read_line() {
    std::string line;
    if (!next_line(line)) throw std::runtime_error("xref serve closed its output; stderr: " + stderr_text());
    nlohmann::json message = nlohmann::json::parse(line);  // throws on a line that is not JSON
    if (!message.is_object()) throw std::runtime_error("not a JSON object: " + line);
    return message;
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int next_id_ = 1;
  std::string err_path_;
  std::string buffer_;
  std::deque<nlohmann::json> pending_;
};

// Protocol 2's `run` with the user's `words` at process `pid`, plus `extra` params.
inline nlohmann::json run_words(ServeClient& helper, const std::vector<std::string>& words, pid_t pid,
                                nlohmann::json extra = nlohmann::json::object(),
                                nlohmann::json context = nlohmann::json::object()) {
  context["pid"] = pid;
  nlohmann::json params = {{"argv", words}, {"context", context}};
  params.update(extra);
  return helper.request("run", params);
}

}  // namespace xref::test
