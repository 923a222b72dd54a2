// Under sudo, every file a user names is opened with that user's rights
// (docs/cli.md, "Privileges"): --mark-file, trace export's -o, --bin and
// saved traces; and every command opens only processes that user could
// ptrace. Sudo is simulated the way sudo sets it up: xref runs as root with
// SUDO_UID, SUDO_GID and SUDO_USER of nobody, an unprivileged user, and the
// targets it may open run as nobody. Each refusal is paired with the same
// command on a file or process nobody may use, which must work, and, where
// it shows the check could fail, with the same command run as plain root,
// which must get what sudo refuses.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "sample_target.h"
#include "saved_trace.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

struct User {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

std::optional<User> nobody() {
  const passwd* entry = getpwnam("nobody");
  if (entry == nullptr) return std::nullopt;
  return User{entry->pw_uid, entry->pw_gid, entry->pw_name};
}

// What sudo puts in the environment of the command it runs for `user`.
std::vector<std::string> sudo_from(const User& user) {
  return {"SUDO_UID=" + std::to_string(user.uid), "SUDO_GID=" + std::to_string(user.gid), "SUDO_USER=" + user.name};
}

// A command prefix that runs a program as `user`, as that user would start it.
std::vector<std::string> run_as(const User& user) {
  return {"/usr/bin/setpriv", "--reuid=" + std::to_string(user.uid), "--regid=" + std::to_string(user.gid),
          "--clear-groups"};
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  chmod(path.c_str(), mode);
}

// A directory of the sudo user's (0755): what is in it the user may read,
// and the user may create files there.
struct UserDirectory {
  explicit UserDirectory(const User& user) {
    char name[] = "/tmp/xref-sudo-XXXXXX";
    path = mkdtemp(name);
    chmod(path.c_str(), 0755);
    if (chown(path.c_str(), user.uid, user.gid) != 0) path.clear();
  }
  ~UserDirectory() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
  std::string path;
};

// /root as Debian makes it: root's, closed to everyone else.
bool root_home_is_closed() {
  struct stat status {};
  return stat("/root", &status) == 0 && status.st_uid == 0 && (status.st_mode & 0007) == 0;
}

// A file under /root, removed when the test ends.
struct RootFile {
  explicit RootFile(const std::string& name) : path("/root/xref-test-" + name + "-" + std::to_string(getpid())) {
    std::filesystem::remove(path);
  }
  ~RootFile() { std::filesystem::remove(path); }
  std::string path;
};

// The first line of /etc/shadow and what '^(root:[^:]*)' takes from root's.
struct Shadow {
  std::string text;
  std::string root_mark;
};

Shadow shadow() {
  Shadow shadow{read_file("/etc/shadow"), ""};
  if (shadow.text.rfind("root:", 0) == 0) shadow.root_mark = shadow.text.substr(0, shadow.text.find(':', 5));
  return shadow;
}

// No line of the shadow file, and not root's field, anywhere in a run's output.
void expect_no_shadow_byte(const XrefRun& run, const Shadow& secret) {
  std::istringstream lines(secret.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(run.out.find(line), std::string::npos) << "a shadow line on stdout";
    EXPECT_EQ(run.err.find(line), std::string::npos) << "a shadow line on stderr";
  }
  EXPECT_EQ(run.out.find(secret.root_mark), std::string::npos) << run.out.substr(0, 2000);
  EXPECT_EQ(run.err.find(secret.root_mark), std::string::npos) << run.err;
}

// Every test: root (to run xref as sudo does, and for BPF), the user
// nobody, and a directory of nobody's.
class SudoCli : public testing::Test {
 protected:
  void SetUp() override {
    XREF_REQUIRE(geteuid() == 0, "root, for BPF and to run xref as sudo does");
    const auto found = nobody();
    ASSERT_TRUE(found) << "no user nobody";
    user_ = *found;
    directory_ = std::make_unique<UserDirectory>(user_);
    ASSERT_FALSE(directory_->path.empty()) << "cannot make a directory for nobody";
  }
  std::vector<std::string> sudo() const { return sudo_from(user_); }
  const std::string& directory() const { return directory_->path; }

  User user_;
  std::unique_ptr<UserDirectory> directory_;
};

std::vector<std::string> marked_trace(const SampleTarget& target, const std::string& log, const std::string& regex) {
  return {"trace",       "--pid", target.pid(), "--start", "handle_request", "--functions", "validate",
          "--mark-file", log,     "--mark-regex", regex,   "--max-windows",  "1",           "--duration-ms",
          "20000",       "--json"};
}

TEST_F(SudoCli, MarkFileTheUserCannotReadIsRefusedAndNoShadowByteShows) {
  const Shadow secret = shadow();
  ASSERT_FALSE(secret.root_mark.empty()) << "/etc/shadow does not start with root's line";
  SampleTarget target(run_as(user_));
  const auto args = marked_trace(target, "/etc/shadow", "^(root:[^:]*)");

  const XrefRun refused = run_xref(args, sudo());
  EXPECT_EQ(refused.exit_status, 9) << refused.err << refused.out;
  const auto document = refused.json();
  EXPECT_EQ(document["error"]["code"], "permission_denied");
  EXPECT_EQ(document["error"]["exit_status"], 9);
  EXPECT_EQ(document["error"]["message"], "cannot read --mark-file /etc/shadow: Permission denied");
  EXPECT_NE(document["error"]["hint"].get<std::string>().find("uid " + std::to_string(user_.uid)), std::string::npos);
  EXPECT_EQ(refused.err.find("xref: tracing"), std::string::npos) << "refused before any probe: " << refused.err;
  expect_no_shadow_byte(refused, secret);

  // Plain root reads it: what the check above keeps out is really there.
  const XrefRun as_root = run_xref(args);
  ASSERT_EQ(as_root.exit_status, 0) << as_root.err;
  EXPECT_EQ(as_root.json()["windows"][0]["mark_match"], secret.root_mark);

  // A log the user can read still stamps windows under sudo.
  const std::string log = directory() + "/app.log";
  write_file(log, "request 7 accepted\n", 0644);
  const XrefRun readable = run_xref(marked_trace(target, log, "^request ([0-9]+)"), sudo());
  ASSERT_EQ(readable.exit_status, 0) << readable.err << readable.out;
  EXPECT_EQ(readable.json()["windows"][0]["mark_match"], "7") << readable.out;
}

// The path is checked again at every poll for rotation: a log replaced by a
// symlink to /etc/shadow while the trace runs is not followed under sudo
// (its windows say the mark is unreadable), and is followed as plain root.
TEST_F(SudoCli, MarkFileRotatedIntoARootOnlyFileIsNotFollowed) {
  const Shadow secret = shadow();
  ASSERT_FALSE(secret.root_mark.empty()) << "/etc/shadow does not start with root's line";
  SampleTarget target(run_as(user_));
  const std::string log = directory() + "/app.log";
  const std::vector<std::string> args = {"trace", "--pid", target.pid(), "--start", "handle_request", "--functions",
                                         "validate", "--mark-file", log, "--mark-regex", "^(request [0-9]+|root:[^:]*)",
                                         "--duration-ms", "1500", "--json"};
  // Rotated 300 ms after attach, so that the first windows have their line.
  const auto rotate_to_shadow = [&log] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::filesystem::rename(log, log + ".1");
    std::filesystem::create_symlink("/etc/shadow", log);
  };
  auto run = [&](const std::vector<std::string>& environment) {
    std::filesystem::remove(log);
    std::filesystem::remove(log + ".1");
    write_file(log, "request 1\n", 0644);
    return run_xref_attached(args, rotate_to_shadow, environment);
  };

  const XrefRun under_sudo = run(sudo());
  ASSERT_EQ(under_sudo.exit_status, 0) << under_sudo.err;
  expect_no_shadow_byte(under_sudo, secret);
  const auto windows = under_sudo.json()["windows"];
  ASSERT_GT(windows.size(), 10u);
  EXPECT_EQ(windows.front()["mark"], "request 1") << windows.front().dump();
  EXPECT_EQ(windows.back()["mark_status"], "unreadable") << windows.back().dump();
  EXPECT_NE(windows.back()["mark_error"].get<std::string>().find("Permission denied"), std::string::npos)
      << windows.back().dump();

  const XrefRun as_root = run({});
  ASSERT_EQ(as_root.exit_status, 0) << as_root.err;
  EXPECT_EQ(as_root.json()["windows"].back()["mark_match"], secret.root_mark);
}

TEST_F(SudoCli, OutputTheUserCannotWriteIsNotCreatedAndExistenceIsNotTold) {
  ASSERT_TRUE(root_home_is_closed()) << "/root must be root's, mode 0700";
  const std::string input = directory() + "/trace.json";
  write_file(input, one_window_trace(), 0644);
  const RootFile output("out");

  const XrefRun absent = run_xref({"trace", "export", input, "-o", output.path}, sudo());
  EXPECT_EQ(absent.exit_status, 9) << absent.err;
  EXPECT_EQ(absent.err.rfind("xref: error: cannot write " + output.path + ": Permission denied; ", 0), 0u)
      << absent.err;
  EXPECT_FALSE(std::filesystem::exists(output.path)) << "created under sudo";

  write_file(output.path, "root's own\n", 0600);
  const XrefRun existing = run_xref({"trace", "export", input, "-o", output.path}, sudo());
  EXPECT_EQ(existing.exit_status, absent.exit_status);
  EXPECT_EQ(existing.err, absent.err) << "an existing file is told apart from a missing one";
  EXPECT_EQ(read_file(output.path), "root's own\n");

  // The user's own directory: written, and the file is the user's.
  const std::string own = directory() + "/trace.chrome.json";
  const XrefRun written = run_xref({"trace", "export", input, "-o", own}, sudo());
  ASSERT_EQ(written.exit_status, 0) << written.err;
  struct stat status {};
  ASSERT_EQ(stat(own.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, user_.uid) << "created with the user's rights";
  EXPECT_TRUE(nlohmann::json::parse(read_file(own)).contains("traceEvents"));

  // Plain root may write there: the refusal above is sudo's.
  const XrefRun as_root = run_xref({"trace", "export", input, "-o", output.path});
  EXPECT_EQ(as_root.exit_status, 0) << as_root.err;
  EXPECT_TRUE(nlohmann::json::parse(read_file(output.path)).contains("traceEvents"));
}

TEST_F(SudoCli, SavedTracesTheUserCannotReadAreRefusedAlikeWhetherOrNotTheyExist) {
  ASSERT_TRUE(root_home_is_closed()) << "/root must be root's, mode 0700";
  const std::string readable = directory() + "/trace.json";
  write_file(readable, one_window_trace(), 0644);
  const RootFile hidden("trace");

  // Each offline command, first with the file absent, then present.
  const std::vector<std::vector<std::string>> commands = {
      {"trace", "show", hidden.path},
      {"trace", "show", hidden.path, "--json"},
      {"trace", "export", hidden.path},
      {"trace", "diff", hidden.path, readable, "--json"},
  };
  std::vector<XrefRun> absent;
  for (const auto& command : commands) absent.push_back(run_xref(command, sudo()));
  write_file(hidden.path, one_window_trace(), 0600);
  for (size_t i = 0; i < commands.size(); ++i) {
    const XrefRun present = run_xref(commands[i], sudo());
    EXPECT_EQ(present.exit_status, absent[i].exit_status) << commands[i][1];
    EXPECT_EQ(present.out, absent[i].out) << commands[i][1];
    EXPECT_EQ(present.err, absent[i].err) << commands[i][1];
    EXPECT_EQ(present.exit_status, commands[i][1] == "diff" ? 2 : 9) << commands[i][1] << ": " << present.err;
  }
  EXPECT_NE(absent[0].err.find("cannot read " + hidden.path + ": Permission denied"), std::string::npos)
      << absent[0].err;
  EXPECT_EQ(absent[1].json()["error"]["code"], "permission_denied");
  EXPECT_EQ(absent[3].json()["error"]["code"], "permission_denied");

  // The same trace where the user can read it, and plain root under /root.
  const XrefRun shown = run_xref({"trace", "show", readable, "--json"}, sudo());
  EXPECT_EQ(shown.exit_status, 0) << shown.err;
  EXPECT_EQ(shown.json()["data"]["windows"].size(), 1u);
  const XrefRun as_root = run_xref({"trace", "show", hidden.path, "--json"});
  EXPECT_EQ(as_root.exit_status, 0) << as_root.err;
  EXPECT_EQ(as_root.json()["data"]["windows"].size(), 1u);
}

TEST_F(SudoCli, BinTheUserCannotReadIsRefused) {
  SampleTarget target(run_as(user_));
  const std::string copy = directory() + "/sample_service";
  std::filesystem::copy_file(XREF_SAMPLE_SERVICE, copy);
  ASSERT_EQ(chmod(copy.c_str(), 0600), 0);  // root's only

  const std::vector<std::string> maps = {"maps", "--pid", target.pid(), "--bin", copy, "--json"};
  const XrefRun refused = run_xref(maps, sudo());
  EXPECT_EQ(refused.exit_status, 9) << refused.out;
  EXPECT_EQ(refused.json()["error"]["code"], "permission_denied");
  EXPECT_EQ(refused.json()["error"]["message"], copy + ": Permission denied");
  const std::string trace = directory() + "/trace.json";
  write_file(trace, one_window_trace(), 0644);
  const XrefRun tree = run_xref({"trace", "show", trace, "--tree", "--bin", copy, "--json"}, sudo());
  EXPECT_EQ(tree.exit_status, 9) << tree.out;
  EXPECT_EQ(tree.json()["error"]["code"], "permission_denied");

  const XrefRun as_root = run_xref(maps);
  EXPECT_EQ(as_root.exit_status, 0) << as_root.out;
  EXPECT_EQ(as_root.json()["process"]["binary_match"], "digest_match");
  ASSERT_EQ(chmod(copy.c_str(), 0644), 0);
  const XrefRun readable = run_xref(maps, sudo());
  EXPECT_EQ(readable.exit_status, 0) << readable.out;
  EXPECT_EQ(readable.json()["process"]["binary_match"], "digest_match");
}

// The kernel's own answer: may `user` ptrace process `pid`? A child that
// has become the user opens /proc/PID/mem, which the kernel grants only to
// a tracer it would let attach (ptrace_may_access).
bool kernel_lets_ptrace(const User& user, pid_t pid) {
  const std::string mem = "/proc/" + std::to_string(pid) + "/mem";
  const pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(user.gid, user.gid, user.gid) != 0 ||
        setresuid(user.uid, user.uid, user.uid) != 0) {
      _exit(2);
    }
    _exit(open(mem.c_str(), O_RDONLY) >= 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 2) << "the child could not become uid " << user.uid;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A process that root started and that then took the user's ids as
// setresuid(user, user, saved) does, without an exec: a set-user-ID
// program that dropped its effective uid but keeps `saved` to take back
// (saved 0), or one that dropped for good (saved = the user) and is no
// longer dumpable, as the kernel makes any process that changed its ids.
class DroppedProcess {
 public:
  DroppedProcess(const User& user, uid_t saved) {
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      if (setgroups(0, nullptr) != 0 || setresgid(user.gid, user.gid, user.gid) != 0 ||
          setresuid(user.uid, user.uid, saved) != 0) {
        _exit(1);
      }
      if (write(ready[1], "r", 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(ready[1]);
    char byte = 0;
    if (read(ready[0], &byte, 1) != 1) pid_ = -1;
    close(ready[0]);
  }
  ~DroppedProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// The uids on the Uid: line of /proc/PID/status (real, effective, saved).
std::string uids_of(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream ids(line.substr(4));
      std::string real, effective, saved;
      ids >> real >> effective >> saved;
      return real + " " + effective + " " + saved;
    }
  }
  return "";
}

// Every command that opens a process, run on process `pid`; resolve asks
// for `code`, a live address of its code.
std::vector<std::vector<std::string>> process_commands(const std::string& pid, const std::string& code) {
  return {{"probe", "--pid", pid, "handle_request", "--duration-ms", "300"},
          {"trace", "--pid", pid, "--start", "handle_request", "--functions", "validate", "--max-windows", "1",
           "--duration-ms", "20000"},
          {"memscan", "--pid", pid, "0x1", "--max-read-bytes", "65536"},
          {"maps", "--pid", pid},
          {"resolve", "--pid", pid, code}};
}

// Under sudo each command refuses the process, in text and JSON: one line,
// exit status 18, error code sudo_user_cannot_ptrace, `message`; nothing
// attached.
void expect_refused_by_every_command(pid_t pid, const std::vector<std::string>& sudo, const std::string& message,
                                     const std::string& user_uid) {
  for (auto command : process_commands(std::to_string(pid), "0x1000")) {
    SCOPED_TRACE(command[0]);
    const XrefRun text = run_xref(command, sudo);
    EXPECT_EQ(text.exit_status, 18) << text.err << text.out;
    EXPECT_EQ(text.out, "");
    EXPECT_EQ(text.err.rfind("xref: error: " + message + "; under sudo xref opens only processes uid " + user_uid +
                                 " could ptrace itself",
                             0),
              0u)
        << text.err;
    EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n'), 1) << "one line, nothing attached: " << text.err;
    command.push_back("--json");
    const XrefRun json = run_xref(command, sudo);
    EXPECT_EQ(json.exit_status, 18) << json.err << json.out;
    const auto error = json.json()["error"];
    EXPECT_EQ(error["code"], "sudo_user_cannot_ptrace") << json.out;
    EXPECT_EQ(error["exit_status"], 18);
    EXPECT_EQ(error["message"], message);
  }
}

// Root's process: the kernel would not let nobody ptrace it, and under sudo
// for nobody no command opens it (probe, trace and memscan used to read
// its stack and memory). Plain root opens it; nobody's own process is
// opened under sudo, where the kernel lets nobody ptrace it too.
TEST_F(SudoCli, EveryCommandOpensOnlyProcessesTheUserCouldPtrace) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  SampleTarget roots;
  ASSERT_EQ(uids_of(roots.process.pid()), "0 0 0");
  EXPECT_FALSE(kernel_lets_ptrace(user_, roots.process.pid()));
  const std::string uid = std::to_string(user_.uid);
  expect_refused_by_every_command(roots.process.pid(), sudo(),
                                  "process " + roots.pid() + " belongs to uid 0: uid " + uid +
                                      ", who ran xref through sudo, could not ptrace it",
                                  uid);
  for (const auto& command : process_commands(roots.pid(), hex(roots.process.value("func", "validate")))) {
    const XrefRun as_root = run_xref(command);
    EXPECT_EQ(as_root.exit_status, 0) << command[0] << ": " << as_root.err;
  }

  SampleTarget own(run_as(user_));
  EXPECT_TRUE(kernel_lets_ptrace(user_, own.process.pid()));
  for (auto command : process_commands(own.pid(), hex(own.process.value("func", "validate")))) {
    command.push_back("--json");
    const XrefRun under_sudo = run_xref(command, sudo());
    EXPECT_EQ(under_sudo.exit_status, 0) << command[0] << ": " << under_sudo.err << under_sudo.out;
    EXPECT_EQ(under_sudo.json()["error"], nullptr) << command[0];
  }
  const XrefRun probed = run_xref({"probe", "--pid", own.pid(), "handle_request", "--duration-ms", "300", "--json"},
                                  sudo());
  EXPECT_GT(probed.json()["addresses"][0]["hits"].get<uint64_t>(), 0u) << "requests come every 2 ms";
}

// A set-user-ID-style process: root started it, it set its real and
// effective uid to nobody's and kept saved uid 0, so it can become root
// again. Its Uid line is nobody's but for the saved uid; the kernel would
// not let nobody ptrace it, and the refusal names the saved uid. One that
// dropped all three uids is not dumpable (the kernel's rule for a process
// that changed its ids), and is refused for that.
TEST_F(SudoCli, AProcessKeepingSavedUidZeroIsRefusedNamingIt) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string uid = std::to_string(user_.uid);
  const DroppedProcess setuid_style(user_, 0);
  ASSERT_GT(setuid_style.pid(), 0);
  ASSERT_EQ(uids_of(setuid_style.pid()), uid + " " + uid + " 0");
  EXPECT_FALSE(kernel_lets_ptrace(user_, setuid_style.pid()));
  const std::string pid = std::to_string(setuid_style.pid());
  expect_refused_by_every_command(setuid_style.pid(), sudo(),
                                  "process " + pid + " (uid " + uid +
                                      ") keeps saved uid 0, set-user-ID rights it can take back: uid " + uid +
                                      ", who ran xref through sudo, could not ptrace it",
                                  uid);
  const XrefRun as_root = run_xref({"maps", "--pid", pid, "--json"});
  EXPECT_EQ(as_root.exit_status, 0) << as_root.err;

  const DroppedProcess dropped(user_, user_.uid);
  ASSERT_GT(dropped.pid(), 0);
  ASSERT_EQ(uids_of(dropped.pid()), uid + " " + uid + " " + uid);
  EXPECT_FALSE(kernel_lets_ptrace(user_, dropped.pid()));
  const XrefRun not_dumpable = run_xref({"maps", "--pid", std::to_string(dropped.pid()), "--json"}, sudo());
  EXPECT_EQ(not_dumpable.exit_status, 18) << not_dumpable.out;
  EXPECT_EQ(not_dumpable.json()["error"]["message"],
            "process " + std::to_string(dropped.pid()) + " (uid " + uid +
                ") is not dumpable (it changed its ids, or cleared PR_SET_DUMPABLE): uid " + uid +
                ", who ran xref through sudo, could not ptrace it");
}

}  // namespace
}  // namespace xref::test
