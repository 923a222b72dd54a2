#include "helper_client.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "json_lines.h"  // shared/: the helper frames its side with it too

namespace xref::lldb_plugin {
namespace {

constexpr size_t kRecentStderrLines = 20;
constexpr int kPollIntervalMs = 100;

HelperReply client_error(std::string code, std::string message) {
  HelperReply reply;
  reply.code = std::move(code);
  reply.message = std::move(message);
  return reply;
}

// Writes all of `text`; a helper that went away gives EPIPE, not a SIGPIPE
// that would kill the debugger (the signal is blocked on this thread and a
// pending one is consumed).
bool write_all(int fd, const std::string& text) {
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  size_t written = 0;
  bool ok = true;
  while (written < text.size()) {
    const ssize_t count = write(fd, text.data() + written, text.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      ok = false;
      break;
    }
    written += static_cast<size_t>(count);
  }
  if (!ok && errno == EPIPE) {
    const timespec zero = {0, 0};
    sigtimedwait(&pipe_signal, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return ok;
}

}  // namespace

HelperClient::HelperClient(HelperCommand command, HelperProcess process)
    : command_(std::move(command)), process_(process) {
  reader_ = std::thread([this] { read_loop(); });
}

HelperClient::~HelperClient() { close(std::chrono::milliseconds(2000)); }

std::unique_ptr<HelperClient> HelperClient::start(const HelperCommand& command, const std::string& client_name,
                                                  std::chrono::milliseconds handshake_timeout, std::string& error) {
  std::string spawn_error;
  auto process = spawn_helper(command, spawn_error);
  if (!process) {
    error = "cannot start the helper '" + command.display() + "': " + spawn_error +
            "; set it with `xref helper PATH` (or XREF_HELPER)";
    return nullptr;
  }
  std::unique_ptr<HelperClient> client(new HelperClient(command, *process));
  HelperReply reply = client->handshake(client_name, handshake_timeout);
  if (!reply.ok) {
    error = reply.message;
    client->close(std::chrono::milliseconds(2000));
    return nullptr;
  }
  return client;
}

HelperReply HelperClient::handshake(const std::string& client_name, std::chrono::milliseconds timeout) {
  const std::string who = "the helper '" + command_.display() + "'";
  {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return hello_seen_ || ended_; });
    if (!hello_seen_) {
      std::string message = ended_ ? who + " " + ending_ + " before the handshake"
                                   : who + " did not greet within " + std::to_string(timeout.count() / 1000) + " s";
      if (!recent_stderr_.empty()) message += ": " + recent_stderr_.back();
      return client_error(ended_ ? "helper_exited" : "timeout", message);
    }
    const auto protocol = hello_.find("protocol");
    if (protocol == hello_.end() || !protocol->is_number_integer() || protocol->get<int>() != kProtocolVersion) {
      return client_error("version_mismatch",
                          who + " speaks protocol " + (protocol == hello_.end() ? std::string("?") : protocol->dump()) +
                              ", this plugin speaks protocol " + std::to_string(kProtocolVersion) +
                              ": use the xref binary built with this plugin");
    }
    if (hello_.contains("tool_version") && hello_["tool_version"].is_string()) {
      tool_version_ = hello_["tool_version"].get<std::string>();
    }
  }
  HelperReply reply = request("hello", {{"protocol", kProtocolVersion}, {"client", client_name}, {"names", true}}, timeout);
  if (!reply.ok) reply.message = who + " refused the handshake: " + reply.message;
  return reply;
}

HelperReply HelperClient::request(const std::string& method, const nlohmann::json& params,
                                  std::chrono::milliseconds timeout) {
  auto pending = std::make_shared<Pending>();
  int64_t id;
  {
    std::lock_guard lock(mutex_);
    if (ended_) return client_error("helper_exited", "the helper " + ending_);
    id = next_id_++;
    pending_[id] = pending;
  }
  const nlohmann::json message = {{"id", id}, {"method", method}, {"params", params}};
  if (!write_line(message.dump() + "\n")) {
    std::unique_lock lock(mutex_);
    pending_.erase(id);
    // The reader sees the end of its output soon; say how it ended if it can.
    changed_.wait_for(lock, std::chrono::milliseconds(1000), [&] { return ended_; });
    return client_error("helper_exited", "the helper " + (ended_ ? ending_ : std::string("closed its input")));
  }
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return pending->done || ended_; });
  pending_.erase(id);
  if (pending->done) return pending->reply;
  if (ended_) return client_error("helper_exited", "the helper " + ending_ + " before answering " + method);
  return client_error("timeout", "the helper did not answer " + method + " within " +
                                     std::to_string(timeout.count() / 1000) + " s");
}

bool HelperClient::write_line(const std::string& line) {
  std::lock_guard lock(write_mutex_);
  if (process_.stdin_fd < 0) return false;
  return write_all(process_.stdin_fd, line);
}

void HelperClient::read_loop() {
  LineSplitter out_lines, err_lines;
  bool out_open = true, err_open = true;
  char buffer[65536];
  while (out_open) {
    {
      std::lock_guard lock(mutex_);
      if (stop_reading_) break;
    }
    pollfd fds[2] = {{process_.stdout_fd, POLLIN, 0}, {err_open ? process_.stderr_fd : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, kPollIntervalMs);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (fds[1].revents != 0) {
      const ssize_t count = read(process_.stderr_fd, buffer, sizeof buffer);
      if (count <= 0) {
        err_open = false;
      } else {
        err_lines.feed({buffer, static_cast<size_t>(count)});
        std::lock_guard lock(mutex_);
        while (auto line = err_lines.next()) {
          if (line->too_large) line->text = "(a line of more than 1 MiB, left out)";
          recent_stderr_.push_back(line->text);
          if (recent_stderr_.size() > kRecentStderrLines) recent_stderr_.pop_front();
          new_stderr_.push_back(std::move(line->text));
        }
      }
    }
    if (fds[0].revents != 0) {
      const ssize_t count = read(process_.stdout_fd, buffer, sizeof buffer);
      if (count <= 0) {
        out_open = false;
      } else {
        out_lines.feed({buffer, static_cast<size_t>(count)});
        // A line past 1 MiB comes empty and too_large: counted as unparsed.
        while (auto line = out_lines.next()) handle_line(line->text);
      }
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (stop_reading_) {
      ended_ = true;
      ending_ = "was left to finish on its own";
      return;
    }
  }
  // The helper closed its output: collect its last words and how it ended.
  for (int waited = 0; err_open && waited < 10; ++waited) {
    pollfd fd = {process_.stderr_fd, POLLIN, 0};
    if (poll(&fd, 1, kPollIntervalMs) <= 0) continue;
    const ssize_t count = read(process_.stderr_fd, buffer, sizeof buffer);
    if (count <= 0) break;
    err_lines.feed({buffer, static_cast<size_t>(count)});
    std::lock_guard lock(mutex_);
    while (auto line = err_lines.next()) {
      if (line->too_large) line->text = "(a line of more than 1 MiB, left out)";
      recent_stderr_.push_back(line->text);
      new_stderr_.push_back(std::move(line->text));
    }
  }
  std::string how = "closed its output";
  for (int waited = 0; waited < 50; ++waited) {
    int status = 0;
    const pid_t done = waitpid(process_.pid, &status, WNOHANG);
    if (done == process_.pid) {
      how = describe_wait_status(status);
      break;
    }
    if (done < 0) break;  // reaped elsewhere: the status is lost
    usleep(20000);
  }
  mark_ended(how);
}

void HelperClient::set_event_handler(EventHandler handler) {
  std::lock_guard lock(mutex_);
  on_event_ = std::move(handler);
}

void HelperClient::handle_line(const std::string& line) {
  nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
  EventHandler on_event;
  const bool is_event = message.is_object() && message.value("type", "") == "event";
  {
    std::lock_guard lock(mutex_);
    if (!message.is_object()) {
      ++unparsed_lines_;
      return;
    }
    if (is_event) {
      on_event = on_event_;
    } else if (message.value("type", "") == "hello" && !hello_seen_) {
      hello_seen_ = true;
      hello_ = std::move(message);
    } else if (message.contains("id") && message["id"].is_number_integer()) {
      const auto found = pending_.find(message["id"].get<int64_t>());
      if (found == pending_.end()) return;  // answered after its timeout
      HelperReply& reply = found->second->reply;
      if (message.contains("result")) {
        reply.ok = true;
        reply.result = std::move(message["result"]);
      } else {
        const nlohmann::json& error = message.contains("error") ? message["error"] : nlohmann::json::object();
        reply.error = error;
        reply.code = error.value("code", "error");
        reply.message = error.value("message", "the helper answered with an error");
      }
      found->second->done = true;
    } else {
      ++unparsed_lines_;
      return;
    }
  }
  if (is_event) {
    if (on_event) on_event(message);
    return;
  }
  changed_.notify_all();
}

void HelperClient::mark_ended(std::string how) {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
    ending_ = std::move(how);
  }
  changed_.notify_all();
}

void HelperClient::notify(const std::string& method, const nlohmann::json& params) {
  int64_t id;
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    id = next_id_++;  // not pending: the answer is dropped when it comes
  }
  write_line(nlohmann::json{{"id", id}, {"method", method}, {"params", params}}.dump() + "\n");
}

bool HelperClient::alive() const {
  std::lock_guard lock(mutex_);
  return !ended_;
}

std::string HelperClient::ending() const {
  std::lock_guard lock(mutex_);
  return ended_ ? ending_ : std::string();
}

std::vector<std::string> HelperClient::take_stderr() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> lines = std::move(new_stderr_);
  new_stderr_.clear();
  return lines;
}

std::vector<std::string> HelperClient::recent_stderr() const {
  std::lock_guard lock(mutex_);
  return {recent_stderr_.begin(), recent_stderr_.end()};
}

void HelperClient::close(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(write_mutex_);
    if (process_.stdin_fd >= 0) ::close(process_.stdin_fd);
    process_.stdin_fd = -1;
  }
  if (!reader_.joinable()) return;
  {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, grace, [&] { return ended_; });
    stop_reading_ = true;  // a helper that does not end is left to finish on its own
  }
  reader_.join();
  ::close(process_.stdout_fd);
  ::close(process_.stderr_fd);
  process_.stdout_fd = process_.stderr_fd = -1;
}

}  // namespace xref::lldb_plugin
