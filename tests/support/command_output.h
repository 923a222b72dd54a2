// Runs a shell command and returns its standard output as lines: the tests
// take their ground truth from binutils (readelf, nm, c++filt).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace xref::test {

// The command's stdout split into lines, or nullopt when it could not be run
// or exited with a non-zero status.
inline std::optional<std::vector<std::string>> command_lines(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::vector<std::string> lines;
  std::string line;
  char buffer[4096];
  while (size_t got = fread(buffer, 1, sizeof buffer, pipe)) {
    for (size_t i = 0; i < got; ++i) {
      if (buffer[i] == '\n') {
        lines.push_back(std::move(line));
        line.clear();
      } else {
        line.push_back(buffer[i]);
      }
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  if (pclose(pipe) != 0) return std::nullopt;
  return lines;
}

}  // namespace xref::test
