// One session of `xref serve` as its thread and the manager share it: its
// stop and drain eventfds, its state for `sessions`, the stop requests and
// drains waiting for it.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "serve/sessions.h"

namespace xref::serve {

// A session.release waiting for the session's thread (release.cpp).
struct PendingRelease {
  nlohmann::json request_id;
  std::vector<uint64_t> addresses;  // live
  std::string reason;
};

struct Session {
  uint64_t id = 0;
  std::string command;
  pid_t pid = 0;
  std::string requested_backend;
  int cancel_fd = -1;  // eventfd: readable once the session must stop
  int drain_fd = -1;   // eventfd: readable when a drain request waits
  std::thread thread;
  std::atomic<bool> thread_done{false};
  // The drain waiting for it was sent at a debugger stop (a profile ends there).
  std::atomic<bool> stop_drain{false};

  std::mutex mutex;  // guards what follows
  std::string state = "attaching";  // attaching, running, stopping, ended
  std::string backend;
  uint64_t windows = 0;
  uint64_t events = 0;
  bool helper_exiting = false;
  bool ended = false;
  std::vector<nlohmann::json> stop_requests;  // answered after session_ended
  StopAnswer stop_answer;
  std::vector<std::shared_ptr<PendingDrain>> drains;  // waiting for this session's next drain
  // session.release (release.cpp): the live address of every probe site
  // once attached; releases for the session's thread; those answered after
  // session_ended (a trace session, or a backend that cannot release one
  // site, ends instead); what ended a trace session.
  std::vector<uint64_t> probe_sites;
  std::vector<PendingRelease> releases;
  std::vector<PendingRelease> releases_at_end;
  std::string release_reason;

  ~Session() {
    if (cancel_fd >= 0) close(cancel_fd);
    if (drain_fd >= 0) close(drain_fd);
  }

  void request_drain() {
    const uint64_t one = 1;
    (void)!write(drain_fd, &one, sizeof one);
  }

  // Attached with `attached_backend`: running unless a stop came first.
  void attached(const std::string& attached_backend) {
    std::lock_guard lock(mutex);
    backend = attached_backend;
    if (state == "attaching") state = "running";
  }

  // A drain request waits for this session's thread.
  bool drain_waiting() {
    std::lock_guard lock(mutex);
    return !drains.empty();
  }

  void cancel() {
    const uint64_t one = 1;
    (void)!write(cancel_fd, &one, sizeof one);
  }
};

}  // namespace xref::serve
