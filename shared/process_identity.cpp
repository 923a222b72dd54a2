#include "process_identity.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "elf_image.h"
#include "file_digest.h"
#include "ptrace_access.h"

namespace xref {
namespace {

constexpr uint64_t kKernelThreadFlag = 0x00200000;  // PF_KTHREAD

std::string read_small_file(const std::string& path, int& error_number) {
  std::ifstream file(path);
  if (!file) {
    error_number = errno;
    return {};
  }
  std::ostringstream content;
  content << file.rdbuf();
  error_number = 0;
  return content.str();
}

std::string pid_text(pid_t pid) { return std::to_string(pid); }

Error gone(pid_t pid) {
  return make_error(ErrorCode::process_exited, "process " + pid_text(pid) + " exited during the operation",
                    "start the target again and retry with its new PID");
}

uid_t real_uid_from_status(const std::string& status) {
  const size_t at = status.find("\nUid:");
  if (at == std::string::npos) return 0;
  return static_cast<uid_t>(std::strtoul(status.c_str() + at + 5, nullptr, 10));
}

// The thread group (process) a thread ID belongs to: /proc/TID/status
// Tgid, readable for any thread although /proc lists only processes; 0
// when unknown.
pid_t thread_group_of(pid_t tid) {
  int error_number = 0;
  const std::string status = read_small_file("/proc/" + pid_text(tid) + "/status", error_number);
  const size_t at = status.find("\nTgid:");
  if (error_number != 0 || at == std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(status.c_str() + at + 6, nullptr, 10));
}

}  // namespace

Result<ProcessStat> parse_proc_stat(std::string_view text) {
  // comm may contain spaces and parentheses: it ends at the LAST ')'.
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return make_error(ErrorCode::internal, "malformed /proc/PID/stat");
  }
  ProcessStat stat;
  stat.comm = std::string(text.substr(open + 1, close - open - 1));
  std::istringstream fields{std::string(text.substr(close + 1))};
  // Fields after comm start at field 3 (state); starttime is field 22.
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) stat.state = field.empty() ? '?' : field[0];
    if (number == 9) stat.flags = std::strtoull(field.c_str(), nullptr, 10);
    if (number == 22) {
      stat.starttime_ticks = std::strtoull(field.c_str(), nullptr, 10);
      return stat;
    }
  }
  return make_error(ErrorCode::internal, "truncated /proc/PID/stat");
}

Result<ProcessHandle> ProcessHandle::open(pid_t pid) {
  if (pid <= 0) {
    return make_error(ErrorCode::invalid_argument, "PID must be a positive number, got " + pid_text(pid));
  }
  ProcessHandle handle;
  handle.identity_.pid = pid;
  handle.pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (handle.pidfd_ < 0) {
    if (errno == ESRCH) {
      return make_error(ErrorCode::no_such_process, "no process with PID " + pid_text(pid),
                        "check the PID with `pgrep` or `ps`");
    }
    // pidfd_open refuses a thread that does not lead its thread group
    // (EINVAL; ENOENT since Linux 6.9).
    const int saved = errno;
    if (saved == EINVAL || saved == ENOENT) {
      if (const pid_t leader = thread_group_of(pid); leader > 0 && leader != pid) {
        return make_error(ErrorCode::pid_is_thread,
                          pid_text(pid) + " is a thread ID: the thread belongs to process " + pid_text(leader),
                          "pass the process's PID, " + pid_text(leader));
      }
    }
    return make_error(ErrorCode::internal, "pidfd_open(" + pid_text(pid) + "): " + std::strerror(saved));
  }

  const std::string proc = "/proc/" + pid_text(pid);
  int error_number = 0;
  const std::string stat_text = read_small_file(proc + "/stat", error_number);
  if (error_number != 0) return gone(pid);
  auto stat = parse_proc_stat(stat_text);
  if (!stat) return stat.error();
  if (stat->state == 'Z' || stat->state == 'X') {
    return make_error(ErrorCode::not_a_user_process, "process " + pid_text(pid) + " is a zombie",
                      "its parent has not reaped it; there is nothing left to trace");
  }
  if (stat->flags & kKernelThreadFlag) {
    return make_error(ErrorCode::not_a_user_process,
                      "PID " + pid_text(pid) + " is a kernel thread (" + stat->comm + ")",
                      "xref traces user-space processes");
  }
  handle.identity_.starttime_ticks = stat->starttime_ticks;
  handle.identity_.comm = stat->comm;
  handle.identity_.uid = real_uid_from_status(read_small_file(proc + "/status", error_number));

  char link[4096];
  const ssize_t length = readlink((proc + "/exe").c_str(), link, sizeof link - 1);
  if (length < 0) {
    if (errno == EACCES || errno == EPERM) return ptrace_access_denied(pid, proc + "/exe", errno);
    if (errno == ENOENT && handle.alive()) {
      return make_error(ErrorCode::not_a_user_process, "PID " + pid_text(pid) + " has no executable",
                        "xref traces user-space processes");
    }
    return gone(pid);
  }
  std::string exe(link, static_cast<size_t>(length));
  constexpr std::string_view deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0) {
    handle.identity_.exe_deleted = true;
    exe.resize(exe.size() - deleted.size());
  }
  handle.identity_.exe_path = exe;

  struct stat exe_status;
  if (::stat(handle.exe_link().c_str(), &exe_status) != 0) return gone(pid);
  handle.identity_.exe_device = exe_status.st_dev;
  handle.identity_.exe_inode = exe_status.st_ino;

  {
    const std::string cmdline = read_small_file(proc + "/cmdline", error_number);
    const std::string argv0 = error_number == 0 ? cmdline.substr(0, cmdline.find('\0')) : "";
    const std::string root = proc + "/root";
    handle.identity_.started_as = started_as_name(argv0, stat->comm, exe, [&](const std::string& path) {
      struct stat named;
      return ::stat((root + path).c_str(), &named) == 0 && named.st_dev == exe_status.st_dev &&
             named.st_ino == exe_status.st_ino;
    });
  }

  auto digest = sha256_file(handle.exe_link());
  if (!digest) return handle.alive() ? digest.error() : gone(pid);
  handle.identity_.exe_sha256 = *digest;
  auto image = ElfImage::open(handle.exe_link());
  if (image) handle.identity_.build_id = image->build_id();

  // Everything above was read after the pidfd was taken; if the pidfd still
  // names a live process, it is the one those files described.
  if (auto still = handle.recheck(); !still) return still.error();
  return handle;
}

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : pidfd_(other.pidfd_), identity_(std::move(other.identity_)) {
  other.pidfd_ = -1;
}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) ::close(pidfd_);
    pidfd_ = other.pidfd_;
    identity_ = std::move(other.identity_);
    other.pidfd_ = -1;
  }
  return *this;
}

ProcessHandle::~ProcessHandle() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

std::string ProcessHandle::exe_link() const { return "/proc/" + pid_text(identity_.pid) + "/exe"; }

bool ProcessHandle::alive() const {
  if (pidfd_ < 0) return false;
  // Signal 0 through the pidfd: ESRCH once the process is gone, even if the
  // PID number has been reused since.
  if (syscall(SYS_pidfd_send_signal, pidfd_, 0, nullptr, 0) == 0) return true;
  return errno == EPERM;
}

Result<void> ProcessHandle::recheck() const {
  const pid_t pid = identity_.pid;
  if (!alive()) return gone(pid);
  int error_number = 0;
  auto stat = parse_proc_stat(read_small_file("/proc/" + pid_text(pid) + "/stat", error_number));
  if (error_number != 0 || !stat) return gone(pid);
  if (stat->starttime_ticks != identity_.starttime_ticks) {
    return make_error(ErrorCode::process_changed,
                      "PID " + pid_text(pid) + " now belongs to another process (start time changed)",
                      "the target exited and its PID was reused; find the new PID");
  }
  if (stat->state == 'Z' || stat->state == 'X') return gone(pid);
  struct stat exe_status;
  if (::stat(exe_link().c_str(), &exe_status) != 0) return gone(pid);
  if (exe_status.st_dev != identity_.exe_device || exe_status.st_ino != identity_.exe_inode) {
    return make_error(ErrorCode::process_changed,
                      "process " + pid_text(pid) + " now runs another executable (it called exec)",
                      "rerun the command against the new image");
  }
  return {};
}

std::string started_as_name(const std::string& argv0, const std::string& comm, const std::string& exe_path,
                            const std::function<bool(const std::string&)>& resolves_to_exe) {
  const std::string exe_name = exe_path.substr(exe_path.rfind('/') + 1);
  // A process may rewrite its argv (redis-server's title "redis-server
  // *:6379"): only the first word can be the path it was started by.
  const std::string word = argv0.substr(0, argv0.find(' '));
  const std::string word_name = word.substr(word.rfind('/') + 1);
  if (!word.empty() && word.front() == '/' && word != exe_path && word_name != exe_name && resolves_to_exe(word)) {
    return word;
  }
  // comm is the basename execve was given, cut to 15 bytes.
  if (comm.empty() || exe_name.compare(0, comm.size(), comm) == 0) return {};
  if (!word_name.empty() && word_name.compare(0, comm.size(), comm) == 0) return word_name;
  return comm;
}

}  // namespace xref
