#include "trace_session.h"

#include <bpf/libbpf.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace xref {
namespace {

constexpr int kDrainIntervalMs = 20;

// SIGINT and SIGTERM become readable events instead of killing the helper,
// so it always detaches and prints what it captured. Restored on scope exit.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
    fd_ = signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~StopSignals() {
    // Take the pending signals out first: unblocked, they would kill the
    // helper before it prints what it captured.
    if (fd_ >= 0) {
      signalfd_siginfo info;
      while (read(fd_, &info, sizeof info) == sizeof info) {
      }
      close(fd_);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  int fd() const { return fd_; }

 private:
  sigset_t set_;
  sigset_t previous_;
  int fd_ = -1;
};

struct DrainContext {
  WindowCollector* windows;
  const TraceCallbacks* callbacks;
};

int on_record(void* context, void* data, size_t size) {
  auto* drain = static_cast<DrainContext*>(context);
  if (size < sizeof(xref_trace_event)) return 0;
  xref_trace_event record;
  std::memcpy(&record, data, sizeof record);
  if (auto ended = drain->windows->add(record); ended && drain->callbacks->window_closed) {
    drain->callbacks->window_closed(drain->windows->windows().at(*ended));
  }
  return 0;
}

struct RingBufferDeleter {
  void operator()(ring_buffer* ring) const { ring_buffer__free(ring); }
};

}  // namespace

Result<TraceRun> run_trace(const Target& target, const TracePlan& plan, const TraceRequest& request,
                           const TraceCallbacks& callbacks) {
  TraceBpfOptions options;
  options.pid = target.process.pid();
  for (const PlanModule& module : plan.modules) options.module_paths.push_back(module.module->open_path);
  options.max_events = request.max_events;
  options.max_windows = request.max_windows;
  options.ringbuf_bytes = request.ringbuf_bytes;
  options.backend = request.backend;

  StopSignals signals;
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  auto bpf = TraceBpf::start(plan, options);
  if (!bpf) {
    // A target that exits during the attach makes /proc/PID/exe vanish;
    // say that, not whatever the kernel's path lookup reported.
    if (auto alive = target.process.recheck(); !alive) return alive.error();
    return bpf.error();
  }

  TraceRun run;
  run.backend = (*bpf)->backend();
  run.windows = std::make_unique<WindowCollector>(plan);
  DrainContext drain{run.windows.get(), &callbacks};
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring(
      ring_buffer__new((*bpf)->ringbuf_fd(), on_record, &drain, nullptr));
  if (!ring) return make_error(ErrorCode::internal, "ring buffer setup failed");
  // Attached after the identity check: make sure the PID did not change
  // hands in between, or the probes sit in a stranger's process.
  if (auto alive = target.process.recheck(); !alive) return alive.error();
  if (callbacks.attached) callbacks.attached(run.backend, plan.probes.size());

  const auto started = std::chrono::steady_clock::now();
  pollfd watched[2] = {{target.process.pidfd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
  for (;;) {
    const int ready = poll(watched, 2, kDrainIntervalMs);
    ring_buffer__consume(ring.get());
    // A bound reached in BPF came first if it is already set.
    const TraceCounters counters = (*bpf)->counters();
    if (counters.stopped) {
      run.stop_reason = counters.stop_reason == XREF_STOP_MAX_EVENTS ? "max_events" : "max_windows";
      break;
    }
    if (ready > 0 && (watched[0].revents & POLLIN)) {
      run.target_exited = true;
      run.stop_reason = "target_exited";
      break;
    }
    if (ready > 0 && (watched[1].revents & POLLIN)) {
      run.stop_reason = "interrupted";
      break;
    }
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (request.duration_ms > 0 &&
        std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() >= static_cast<long>(request.duration_ms)) {
      run.stop_reason = "duration";
      break;
    }
  }
  (*bpf)->detach();
  ring_buffer__consume(ring.get());  // what was submitted before the detach
  run.counters = (*bpf)->counters();
  run.windows->apply_results((*bpf)->window_results());
  run.elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  return run;
}

}  // namespace xref
