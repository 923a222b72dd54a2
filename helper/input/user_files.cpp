#include "input/user_files.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

namespace xref {
namespace {

// One request, one SOCK_SEQPACKET message: this header, then the path.
// The answer: an int32 errno (0 on success) with the descriptor attached.
struct OpenRequest {
  int32_t flags = 0;
  uint32_t mode = 0;
};

constexpr size_t kMaxPath = PATH_MAX;
constexpr int kOpenerGone = -1;  // in place of an errno: the opener did not answer
constexpr int kOpenerSocket = 3;  // the opener's end, in the opener

struct Opener {
  std::mutex mutex;  // one request at a time: serve's sessions share it
  int socket = -1;
};

// Set once by act_for_sudo_user, before any thread, and kept until exit.
Opener* opener = nullptr;
std::optional<SudoUser> acting_user;

// --- the opener process: after fork, so async-signal-safe calls only ---

bool send_answer(int error, int fd) {
  int32_t value = error;
  iovec part{&value, sizeof value};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  return sendmsg(kOpenerSocket, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof value);
}

// Groups, then gid, then uid: after setresuid away from 0 no capability is
// left and none can come back.
int become(const SudoUser& user) {
  if (setgroups(user.groups.size(), user.groups.data()) != 0) return errno;
  if (setresgid(user.gid, user.gid, user.gid) != 0) return errno;
  if (setresuid(user.uid, user.uid, user.uid) != 0) return errno;
  return 0;
}

// Keeps only the socket (as fd 3) and /dev/null on 0, 1 and 2: the opener
// must not hold xref's stdout open after xref exits, nor lend anything else.
void keep_only_socket(int socket, int null) {
  dup2(null, STDIN_FILENO);
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  dup2(socket, kOpenerSocket);
  if (close_range(kOpenerSocket + 1, ~0u, 0) != 0) {
    for (int fd = kOpenerSocket + 1; fd < 65536; ++fd) close(fd);
  }
}

[[noreturn]] void run_opener(const SudoUser& user, pid_t parent, int socket, int null) {
  // Ctrl-C and Ctrl-Z go to the whole foreground group: xref still opens
  // files while it stops, so they are xref's to handle, not the opener's.
  for (int terminal_signal : {SIGINT, SIGQUIT, SIGTSTP, SIGHUP}) signal(terminal_signal, SIG_IGN);
  keep_only_socket(socket, null);
  const int32_t became = become(user);
  // After become(): a change of credentials clears the parent-death signal.
  // The socket's end of file ends the opener too; this covers a SIGKILL.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  if (send(kOpenerSocket, &became, sizeof became, MSG_NOSIGNAL) != sizeof became || became != 0) _exit(1);
  char buffer[sizeof(OpenRequest) + kMaxPath + 1];
  for (;;) {
    const ssize_t got = recv(kOpenerSocket, buffer, sizeof buffer - 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < static_cast<ssize_t>(sizeof(OpenRequest))) _exit(0);  // xref has gone
    OpenRequest request;
    std::memcpy(&request, buffer, sizeof request);
    char* path = buffer + sizeof request;
    path[got - static_cast<ssize_t>(sizeof request)] = '\0';
    // Never blocks (a FIFO without a writer): the caller clears O_NONBLOCK.
    const int fd = open(path, request.flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, request.mode);
    const bool answered = send_answer(fd < 0 ? errno : 0, fd);
    if (fd >= 0) close(fd);
    if (!answered) _exit(0);
  }
}

// --- xref's side ---

struct Opened {
  UniqueFd fd;
  int error = 0;  // errno, or kOpenerGone
};

Opened open_directly(const std::string& path, int flags, mode_t mode) {
  Opened opened;
  opened.fd.reset(::open(path.c_str(), flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode));
  if (!opened.fd) opened.error = errno;
  return opened;
}

Opened ask_opener(const std::string& path, int flags, mode_t mode) {
  const size_t length = std::strlen(path.c_str());
  if (length > kMaxPath) return {UniqueFd(), ENAMETOOLONG};
  char request[sizeof(OpenRequest) + kMaxPath];
  const OpenRequest header{flags, static_cast<uint32_t>(mode)};
  std::memcpy(request, &header, sizeof header);
  std::memcpy(request + sizeof header, path.c_str(), length);

  int32_t error = kOpenerGone;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec part{&error, sizeof error};
  msghdr answer{};
  answer.msg_iov = &part;
  answer.msg_iovlen = 1;
  answer.msg_control = control;
  answer.msg_controllen = sizeof control;
  ssize_t got = -1;
  {
    std::lock_guard lock(opener->mutex);
    if (send(opener->socket, request, sizeof header + length, MSG_NOSIGNAL) < 0) return {UniqueFd(), kOpenerGone};
    do {
      got = recvmsg(opener->socket, &answer, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
  }
  Opened opened;
  for (cmsghdr* part_header = CMSG_FIRSTHDR(&answer); part_header != nullptr;
       part_header = CMSG_NXTHDR(&answer, part_header)) {
    if (part_header->cmsg_level == SOL_SOCKET && part_header->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(part_header), sizeof fd);
      opened.fd.reset(fd);
    }
  }
  if (got != static_cast<ssize_t>(sizeof error)) return {UniqueFd(), kOpenerGone};
  if (error != 0 || !opened.fd) return {UniqueFd(), error != 0 ? error : kOpenerGone};
  return opened;
}

// Either way the open never blocks (a FIFO without a writer, a device that
// waits for carrier); O_NONBLOCK is taken off again unless the caller asked
// for it.
Opened open_with_user_rights(const std::string& path, int flags, mode_t mode) {
  Opened opened = opener == nullptr ? open_directly(path, flags, mode) : ask_opener(path, flags, mode);
  if (opened.fd && !(flags & (O_NONBLOCK | O_PATH))) {
    const int status = fcntl(opened.fd.get(), F_GETFL);
    if (status >= 0) fcntl(opened.fd.get(), F_SETFL, status & ~O_NONBLOCK);
  }
  return opened;
}

// A copy of `fd` numbered 10 or more (`fd` is closed): above whatever xref
// was started with, so the opener's dup2 onto 0 to 3 cannot overwrite it.
UniqueFd numbered_high(int fd) {
  const UniqueFd original(fd);
  return UniqueFd(original ? fcntl(original.get(), F_DUPFD_CLOEXEC, 10) : -1);
}

Error open_error(const std::string& path, int error) {
  const std::string uid = acting_user ? std::to_string(acting_user->uid) : "";
  if (error == kOpenerGone) {
    return make_error(ErrorCode::internal, "the process that opens files as uid " + uid + " has exited",
                      "run xref again");
  }
  if (error == EACCES || error == EPERM) {
    return make_error(ErrorCode::permission_denied, path + ": " + std::strerror(error),
                      acting_user ? "under sudo, xref opens the files you name with your own rights (uid " + uid +
                                        "): give a path you can open yourself"
                                  : "check the path and its permissions");
  }
  return make_error(ErrorCode::file_error, path + ": " + std::strerror(error), "check the path");
}

}  // namespace

Result<void> act_for_sudo_user(const SudoUser& user) {
  const auto failed = [&user](const std::string& why) {
    return make_error(ErrorCode::permission_denied,
                      "cannot open files as uid " + std::to_string(user.uid) + " (SUDO_UID): " + why,
                      "check SUDO_UID and SUDO_GID, or run xref as root without sudo");
  };
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return failed(std::strerror(errno));
  UniqueFd ours(pair[0]);
  UniqueFd theirs = numbered_high(pair[1]);
  const UniqueFd null = numbered_high(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!theirs || !null) return failed(std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return failed(std::strerror(errno));
  if (child == 0) run_opener(user, parent, theirs.get(), null.get());
  theirs.reset();
  int32_t became = kOpenerGone;
  ssize_t got;
  do {
    got = recv(ours.get(), &became, sizeof became, 0);
  } while (got < 0 && errno == EINTR);
  if (got != sizeof became || became != 0) {
    waitpid(child, nullptr, 0);
    return failed(became > 0 ? std::strerror(became) : "the opener exited");
  }
  opener = new Opener;
  opener->socket = ours.release();
  acting_user = user;
  return {};
}

const std::optional<SudoUser>& acting_sudo_user() { return acting_user; }

Result<UniqueFd> open_user_file(const std::string& path, int flags, mode_t mode) {
  Opened opened = open_with_user_rights(path, flags, mode);
  if (opened.error != 0) return open_error(path, opened.error);
  return std::move(opened.fd);
}

Result<std::optional<struct stat>> stat_user_file(const std::string& path) {
  // An O_PATH descriptor needs what stat(2) needs: search rights on the
  // directories, none on the file.
  Opened opened = open_with_user_rights(path, O_PATH, 0);
  if (opened.error == ENOENT) return std::optional<struct stat>{};
  if (opened.error != 0) return open_error(path, opened.error);
  struct stat status {};
  if (fstat(opened.fd.get(), &status) != 0) return open_error(path, errno);
  return std::optional<struct stat>{status};
}

}  // namespace xref
