// xref serve: the helper protocol on stdin/stdout for the debugger front
// ends (docs/protocol.md). This file is the edge: the private protocol
// descriptors, signals and the read loop.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iostream>
#include <memory>

#include "output/report.h"
#include "serve/commands.h"
#include "serve/server.h"

namespace xref {
namespace {

// How often the loop looks for ended sessions to join and for a front end
// that stopped reading, when no input comes.
constexpr int kIdlePollMs = 500;
// At exit, after the detach: how long queued lines may wait for a reader.
constexpr int kExitGraceMs = 2000;
// A front end that stops reading: once this many bytes of answers and
// events that are never dropped wait for it, no further request is read
// (each would only add an answer) until it reads again.
constexpr size_t kPauseInputBytes = size_t{4} << 20;
constexpr int kPausedPollMs = 20;

int64_t ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

int refuse(const Error& error) {
  std::cerr << error_line(error) << std::endl;
  return error_exit_status(error.code);
}

struct ProtocolDescriptors {
  int in = -1;
  int out = -1;
};

// The protocol gets private copies of stdin and stdout; fd 1 then points at
// stderr and fd 0 at /dev/null, so a stray print or read anywhere in the
// process can never corrupt or steal a protocol line.
Result<ProtocolDescriptors> take_protocol_descriptors() {
  std::cout.flush();
  ProtocolDescriptors fds;
  fds.in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  fds.out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fds.in < 0 || fds.out < 0 || null < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
      dup2(null, STDIN_FILENO) < 0) {
    return make_error(ErrorCode::internal, "xref serve cannot set up its protocol descriptors");
  }
  close(null);
  return fds;
}

int run_serve(size_t max_sessions) {
  // A probe session holds some twenty descriptors (maps, programs, links,
  // its target's files): --max-sessions of them need more than the usual
  // soft limit of 1,024, so the helper takes what the hard limit allows.
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  auto fds = take_protocol_descriptors();
  if (!fds) return refuse(fds.error());
  // SIGINT and SIGTERM end the helper cleanly (every probe detached); every
  // thread started later inherits the mask and leaves them to this loop.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);  // a front end that stops reading is seen as a failed write

  serve::ProtocolWriter writer(fds->out);
  serve::Server server(writer, max_sessions);
  serve::LineSplitter splitter;
  writer.write(serve::hello_line(getpid()));

  bool running = true;
  while (running && !writer.broken()) {
    const bool paused = writer.backlog_bytes() >= kPauseInputBytes;
    pollfd watched[2] = {{paused ? -1 : fds->in, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    const int ready = poll(watched, signal_fd >= 0 ? 2 : 1, paused ? kPausedPollMs : kIdlePollMs);
    if (ready < 0 && errno != EINTR) break;
    server.reap();
    if (ready <= 0) continue;
    if (watched[1].revents & POLLIN) break;  // SIGINT or SIGTERM
    if (!(watched[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buffer[65536];
    const ssize_t count = read(fds->in, buffer, sizeof buffer);
    if (count < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (count <= 0) {
      splitter.finish();  // stdin closed: the last unterminated line, then exit
      running = false;
    } else {
      splitter.feed({buffer, static_cast<size_t>(count)});
    }
    while (auto line = splitter.next()) {
      if (!server.handle(*line)) {
        running = false;
        break;
      }
    }
  }
  const auto exiting = std::chrono::steady_clock::now();
  server.stop_sessions();
  const int64_t detach_ms = ms_since(exiting);
  // Every probe is out; what is still queued gets a short while to go out.
  const auto grace_began = std::chrono::steady_clock::now();
  const OutputTotals output = writer.finish(kExitGraceMs);
  // For humans, and for tests that check the promise of docs/protocol.md.
  std::cerr << "xref serve: exiting: every session detached in " << detach_ms << " ms, then "
            << ms_since(grace_began) << " ms of the " << kExitGraceMs << " ms grace for the front end to read; "
            << output.pieces_unwritten << " lines (" << output.bytes_unwritten << " bytes) unsent; "
            << output.pieces_superseded << " drain updates superseded unsent" << std::endl;
  if (signal_fd >= 0) close(signal_fd);
  return 0;
}

}  // namespace

void setup_serve(CLI::App& app, int& exit_status) {
  CLI::App* command = app.add_subcommand(
      "serve", "speak the helper protocol on stdin/stdout (docs/protocol.md); the debugger front ends run this");
  auto max_sessions = std::make_shared<size_t>(serve::SessionManager::kDefaultMaxSessions);
  command
      ->add_option("--max-sessions", *max_sessions,
                   "sessions at once (attaching, running or stopping); a session.start beyond them is refused")
      ->check(CLI::Range(size_t{1}, size_t{4096}))
      ->capture_default_str();
  command->callback([max_sessions, &exit_status] { exit_status = run_serve(*max_sessions); });
}

}  // namespace xref
