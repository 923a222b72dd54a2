// The front end's side of the helper protocol (docs/protocol.md, protocol
// 2: the helper renders; its only events are notifications to print): starts the helper, does the handshake,
// sends requests and waits for their responses on a background reader
// thread. Knows nothing about LLDB.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "helper_process.h"

namespace xref::lldb_plugin {

inline constexpr int kProtocolVersion = 2;

// A response: a result, or an error with the helper's code (docs/cli.md and
// docs/protocol.md), or one of the client's own codes: `helper_exited` (the
// helper died before answering), `timeout`, `write_failed`.
struct HelperReply {
  bool ok = false;
  nlohmann::json result;
  std::string code;
  std::string message;
  nlohmann::json error;  // the helper's whole error object (its hint, its text), when it sent one
};

class HelperClient {
 public:
  // Starts the helper and completes the handshake. On failure returns null
  // and sets `error` to one line saying what went wrong.
  static std::unique_ptr<HelperClient> start(const HelperCommand& command, const std::string& client_name,
                                             std::chrono::milliseconds handshake_timeout, std::string& error);
  ~HelperClient();
  HelperClient(const HelperClient&) = delete;
  HelperClient& operator=(const HelperClient&) = delete;

  HelperReply request(const std::string& method, const nlohmann::json& params, std::chrono::milliseconds timeout);

  // A request whose answer nobody waits for (`resumed`).
  void notify(const std::string& method, const nlohmann::json& params);

  // Called on the reader thread for each notification the helper sends
  // unasked (protocol 2: a trace's `heartbeat`, whose `text` is to print).
  using EventHandler = std::function<void(const nlohmann::json& event)>;
  void set_event_handler(EventHandler handler);

  bool alive() const;
  // How the helper ended ("was killed by signal 9 (SIGKILL)"), "" while it runs.
  std::string ending() const;
  // Lines the helper wrote on stderr since the last call.
  std::vector<std::string> take_stderr();
  // The last stderr lines, kept for messages about its death.
  std::vector<std::string> recent_stderr() const;

  // Closes the helper's stdin (it stops every session, detaches and exits)
  // and waits up to `grace` for it to end.
  void close(std::chrono::milliseconds grace);

  pid_t pid() const { return process_.pid; }
  const HelperCommand& command() const { return command_; }
  const std::string& tool_version() const { return tool_version_; }

 private:
  HelperClient(HelperCommand command, HelperProcess process);
  void read_loop();
  void handle_line(const std::string& line);
  void mark_ended(std::string how);
  bool write_line(const std::string& line);
  HelperReply handshake(const std::string& client_name, std::chrono::milliseconds timeout);

  struct Pending {
    bool done = false;
    HelperReply reply;
  };

  const HelperCommand command_;
  HelperProcess process_;
  std::string tool_version_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, std::shared_ptr<Pending>> pending_;
  int64_t next_id_ = 1;
  bool hello_seen_ = false;
  nlohmann::json hello_;
  bool ended_ = false;
  std::string ending_;
  std::vector<std::string> new_stderr_;
  std::deque<std::string> recent_stderr_;
  size_t unparsed_lines_ = 0;

  EventHandler on_event_;  // under mutex_; called without it

  std::mutex write_mutex_;
  bool stop_reading_ = false;  // under mutex_
  std::thread reader_;
};

}  // namespace xref::lldb_plugin
