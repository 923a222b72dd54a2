// Runs a shell command and returns its standard output, for tests that take
// their ground truth from nm, objdump or readelf.
#pragma once

#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xref::test {

inline std::string command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  size_t count;
  while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
  if (pclose(pipe) != 0) throw std::runtime_error("command failed: " + command);
  return output;
}

inline std::vector<std::string> command_lines(const std::string& command) {
  std::vector<std::string> lines;
  std::string output = command_output(command);
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    lines.push_back(output.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Like command_lines, but nullopt instead of an exception when the command fails.
inline std::optional<std::vector<std::string>> try_command_lines(const std::string& command) {
  try {
    return command_lines(command);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

inline std::string fixture_path(const std::string& name) { return std::string(XREF_FIXTURE_DIR) + "/" + name; }

// A gtest parameter name for a binary given by name or path: its file name,
// every character that is not a letter or digit as '_'.
inline std::string binary_test_name(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace xref::test
