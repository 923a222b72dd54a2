// Runs the xref binary under test and captures its exit status and output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

struct XrefRun {
  int exit_status = -1;
  std::string out;
  std::string err;
  // stdout as one JSON document; what xref printed is in the exception when it is not.
  nlohmann::json json() const {
    try {
      return nlohmann::json::parse(out);
    } catch (const nlohmann::json::parse_error& error) {
      throw std::runtime_error(std::string(error.what()) + "\n--- stdout ---\n" + out + "--- stderr ---\n" + err);
    }
  }
};

inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "'\\''";
    else quoted += c;
  }
  return quoted + "'";
}

inline std::string hex_string(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// `environment`: extra NAME=VALUE settings for xref (e.g. SUDO_UID).
inline XrefRun run_xref(const std::vector<std::string>& args, const std::vector<std::string>& environment = {}) {
  char err_path[] = "/tmp/xref-test-stderr-XXXXXX";
  const int err_fd = mkstemp(err_path);
  close(err_fd);
  std::string command = environment.empty() ? "" : "env";
  for (const auto& setting : environment) command += " " + shell_quote(setting);
  command += (command.empty() ? "" : " ") + shell_quote(XREF_BINARY);
  for (const auto& arg : args) command += " " + shell_quote(arg);
  command += " 2>" + std::string(err_path);
  XrefRun run;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  size_t count;
  while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, count);
  const int status = pclose(pipe);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE* err = fopen(err_path, "r");
  while ((count = fread(buffer, 1, sizeof buffer, err)) > 0) run.err.append(buffer, count);
  fclose(err);
  unlink(err_path);
  return run;
}

// How run_program starts and watches a run: `in_child` runs in the child
// just before the exec (environment, credentials); `attached`, when set,
// once xref reports that its probes are attached (the "xref: tracing" or
// "xref: probing" line on stderr).
inline bool attached_line(const std::string& err) {
  return err.find("xref: tracing") != std::string::npos || err.find("xref: probing") != std::string::npos;
}

struct RunHooks {
  std::function<void()> in_child;
  std::function<void()> attached;
};

// Runs `program` (an xref binary) with `args`, output captured in files.
inline XrefRun run_program(const std::string& program, const std::vector<std::string>& args, const RunHooks& hooks) {
  char out_path[] = "/tmp/xref-test-stdout-XXXXXX";
  char err_path[] = "/tmp/xref-test-stderr-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  const pid_t child = fork();
  if (child == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    if (hooks.in_child) hooks.in_child();
    std::vector<char*> argv = {const_cast<char*>(program.c_str())};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  auto slurp = [](const char* path) {
    std::string text;
    if (FILE* file = fopen(path, "r")) {
      char buffer[4096];
      size_t count;
      while ((count = fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, count);
      fclose(file);
    }
    return text;
  };
  int status = 0;
  bool released = false;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (hooks.attached && !released && attached_line(slurp(err_path))) {
      hooks.attached();
      released = true;
    }
    usleep(5000);
  }
  XrefRun run;
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = slurp(out_path);
  run.err = slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return run;
}

// Runs xref and, once its probes are attached, calls `attached`.
inline XrefRun run_xref_attached(const std::vector<std::string>& args, const std::function<void()>& attached,
                                 const std::vector<std::string>& environment = {}) {
  const auto set_environment = [&environment] {
    for (const auto& setting : environment) putenv(const_cast<char*>(setting.c_str()));
  };
  return run_program(XREF_BINARY, args, {set_environment, attached});
}

// Runs xref and, once its probes are attached, creates `go_file`: targets
// started with --go-file begin their requests only then.
inline XrefRun run_xref_attached(const std::vector<std::string>& args, const std::string& go_file) {
  return run_xref_attached(args, [&go_file] {
    if (FILE* go = fopen(go_file.c_str(), "w")) fclose(go);
  });
}

}  // namespace xref::test
