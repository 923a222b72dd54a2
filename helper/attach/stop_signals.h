// SIGINT and SIGTERM as a readable descriptor instead of the end of the
// helper, for the scope of an object: a command always detaches and prints
// what it captured. Each signal can be read once (consume it to wait for the
// next one). Restored on scope exit.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace xref {

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
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int fd() const { return fd_; }

 private:
  sigset_t set_;
  sigset_t previous_;
  int fd_ = -1;
};

}  // namespace xref
