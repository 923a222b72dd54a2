// Runs the xref binary under test and captures its exit status and output.
#pragma once

#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

struct XrefRun {
  int exit_status = -1;
  std::string out;
  std::string err;
  nlohmann::json json() const { return nlohmann::json::parse(out); }
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

inline XrefRun run_xref(const std::vector<std::string>& args) {
  char err_path[] = "/tmp/xref-test-stderr-XXXXXX";
  const int err_fd = mkstemp(err_path);
  close(err_fd);
  std::string command = shell_quote(XREF_BINARY);
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

}  // namespace xref::test
