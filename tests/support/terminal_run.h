// Runs the xref binary with stderr (and stdout, if asked) on a pseudo-
// terminal, as in a person's shell, and reads the terminal back: the bytes
// xref wrote to it, and the screen they leave (a small emulation of what
// a terminal does with '\r', '\n' and "erase to the end of the line").
#pragma once

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <string>
#include <vector>

namespace xref::test {

struct TerminalRun {
  int exit_status = -1;
  std::string terminal;  // every byte written to the terminal
  std::string out;       // stdout, when it went to a file
};

// `stdout_on_terminal`: stdout is the same terminal as stderr.
inline TerminalRun run_on_terminal(const std::vector<std::string>& args, bool stdout_on_terminal) {
  TerminalRun run;
  int master = -1, slave = -1;
  winsize size{};
  size.ws_row = 50;
  size.ws_col = 250;
  if (openpty(&master, &slave, nullptr, nullptr, &size) != 0) return run;
  char out_path[] = "/tmp/xref-terminal-stdout-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const pid_t child = fork();
  if (child == 0) {
    close(master);
    setsid();
    dup2(slave, STDERR_FILENO);
    dup2(stdout_on_terminal ? slave : out_fd, STDOUT_FILENO);
    std::vector<char*> argv = {const_cast<char*>(XREF_BINARY)};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(XREF_BINARY, argv.data());
    _exit(127);
  }
  close(slave);
  close(out_fd);
  char buffer[4096];
  for (;;) {
    const ssize_t count = read(master, buffer, sizeof buffer);
    if (count > 0) {
      run.terminal.append(buffer, static_cast<size_t>(count));
    } else if (count < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: every descriptor of the terminal's other side is closed
    }
  }
  close(master);
  int status = 0;
  waitpid(child, &status, 0);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* file = fopen(out_path, "r")) {
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, file)) > 0) run.out.append(buffer, count);
    fclose(file);
  }
  unlink(out_path);
  return run;
}

// The lines a terminal shows once `bytes` are written to it: '\r' goes to
// the start of the line, '\n' to the next line, ESC [ K erases from the
// cursor to the end of the line; other bytes are written over what is there.
inline std::vector<std::string> screen_lines(const std::string& bytes) {
  std::vector<std::string> lines(1);
  size_t column = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    std::string& line = lines.back();
    if (c == '\r') {
      column = 0;
    } else if (c == '\n') {
      lines.emplace_back();
      column = 0;  // the terminal's onlcr sends "\r\n"
    } else if (c == '\033' && bytes.compare(i, 3, "\033[K") == 0) {
      line.resize(std::min(line.size(), column));
      i += 2;
    } else {
      if (column < line.size()) line[column] = c;
      else line.append(column - line.size(), ' ') += c;
      ++column;
    }
  }
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

// Every text drawn after an erase ("\r\033[K"), up to the next control
// byte: the status lines, in the order they were drawn.
inline std::vector<std::string> status_draws(const std::string& bytes) {
  std::vector<std::string> draws;
  const std::string erase = "\r\033[K";
  for (size_t at = bytes.find(erase); at != std::string::npos; at = bytes.find(erase, at + 1)) {
    const size_t start = at + erase.size();
    const size_t end = bytes.find_first_of("\r\n\033", start);
    const std::string text = bytes.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!text.empty()) draws.push_back(text);
  }
  return draws;
}

// A count as a status line spells it ("3,201"), read back.
inline uint64_t grouped_value(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  return std::stoull(digits);
}

}  // namespace xref::test
