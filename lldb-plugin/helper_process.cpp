#include "helper_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

extern char** environ;

namespace xref::lldb_plugin {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
}

}  // namespace

std::string HelperCommand::display() const {
  std::string text;
  for (const auto& word : argv) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::optional<std::vector<std::string>> split_command_line(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return std::nullopt;
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string plugin_library_path() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&plugin_library_path), &info) == 0 || info.dli_fname == nullptr) return {};
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) != nullptr) return resolved;
  return info.dli_fname;
}

const char* const kInstalledHelper = XREF_INSTALLED_HELPER;

HelperCommand default_helper_command(const std::string& plugin_path, const std::string& installed) {
  std::vector<std::filesystem::path> candidates;
  if (!plugin_path.empty()) {
    const std::filesystem::path directory = std::filesystem::path(plugin_path).parent_path();
    candidates = {directory / "xref", directory / ".." / "helper" / "xref"};
  }
  if (!installed.empty()) candidates.emplace_back(installed);
  for (const auto& candidate : candidates) {
    const std::string path = candidate.lexically_normal().string();
    if (is_executable_file(path)) return {{path, "serve"}};
  }
  return {{"xref", "serve"}};  // found on PATH by posix_spawnp, or a clear ENOENT
}

std::optional<HelperProcess> spawn_helper(const HelperCommand& command, std::string& error) {
  if (command.argv.empty()) {
    error = "empty command";
    return std::nullopt;
  }
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    error = strerror(errno);
    close_pair(in);
    close_pair(out);
    close_pair(err);
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the copies only.
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const auto& word : command.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  // posix_spawnp searches PATH only for a bare name; glibc reports a failed
  // exec as the return value.
  const int status = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (status != 0) {
    error = strerror(status);
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return std::nullopt;
  }
  return HelperProcess{pid, in[1], out[0], err[0]};
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    const char* abbreviation = sigabbrev_np(signal_number);
    return "was killed by signal " + std::to_string(signal_number) +
           (abbreviation != nullptr ? " (SIG" + std::string(abbreviation) + ")" : std::string());
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

}  // namespace xref::lldb_plugin
