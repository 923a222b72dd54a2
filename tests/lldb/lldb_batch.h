// Runs real lldb-19 in batch mode with the plugin loaded, and reads what it
// printed: the windows (`xref show` text) and LLDB's own stop reports.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "require.h"
#include "run_xref.h"

namespace xref::test {

inline bool lldb_available() { return std::string(XREF_LLDB_PROGRAM).size() > 0 && access(XREF_LLDB_PROGRAM, X_OK) == 0; }

struct LldbRun {
  int exit_status = -1;
  std::string output;  // stdout and stderr, interleaved as printed
  size_t count(const std::string& text) const {
    size_t found = 0;
    for (size_t at = output.find(text); at != std::string::npos; at = output.find(text, at + text.size())) ++found;
    return found;
  }
  bool has(const std::string& text) const { return output.find(text) != std::string::npos; }
  // The output after the first line that contains `marker` ("" when absent).
  std::string after(const std::string& marker) const {
    const size_t at = output.find(marker);
    return at == std::string::npos ? std::string() : output.substr(at);
  }
};

// `lldb-19 -b` with the plugin loaded first, then `commands`, on `target`
// (program and run arguments). `environment` is added to lldb's (the
// plugin passes it on to the helper). Batch mode ends the command list at
// a stop by a signal (xref's --stop-when stop is one); `after_signal` runs
// then (lldb's -k).
inline LldbRun run_lldb(const std::vector<std::string>& commands, const std::vector<std::string>& target,
                        const std::vector<std::string>& environment = {}, int timeout_seconds = 240,
                        const std::vector<std::string>& after_signal = {}) {
  std::string line = "env -u XREF_HELPER";
  for (const auto& variable : environment) line += " " + shell_quote(variable);
  line += " timeout -s KILL " + std::to_string(timeout_seconds) + " " + shell_quote(XREF_LLDB_PROGRAM) +
          " --no-lldbinit -b -o " + shell_quote(std::string("plugin load ") + XREF_LLDB_PLUGIN);
  for (const auto& command : commands) line += " -o " + shell_quote(command);
  for (const auto& command : after_signal) line += " -k " + shell_quote(command);
  if (!target.empty()) {
    line += " --";
    for (const auto& word : target) line += " " + shell_quote(word);
  }
  line += " 2>&1 </dev/null";
  LldbRun run;
  FILE* pipe = popen(line.c_str(), "r");
  char buffer[4096];
  size_t count;
  while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, count);
  const int status = pclose(pipe);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// A window as the helper prints it (docs/trace.md): a header "window W
// (session S)  thread T ...", then one line per event "  W:SEQ  [TIME]
// <indent>MARK NAME ...". Only what a test compares is read: the columns
// between the reference and the mark are the renderer's.
struct ShownEvent {
  std::string reference;  // "W:SEQ"
  char mark = '?';        // > < ~ |
  std::string name;       // the function, as LLDB names it
  std::string rest;       // the rest of the line
};

struct ShownWindow {
  std::string header;
  uint64_t id = 0;
  uint64_t session = 0;
  std::vector<ShownEvent> events;
  // "> validate" per event, entries and returns only.
  std::vector<std::string> calls() const {
    std::vector<std::string> lines;
    for (const auto& event : events) {
      if (event.mark == '>' || event.mark == '<') lines.push_back(std::string(1, event.mark) + " " + event.name);
    }
    return lines;
  }
};

inline std::vector<ShownWindow> shown_windows(const std::string& output) {
  static const std::regex header("^window ([0-9]+) \\(session ([0-9]+)\\)");
  static const std::regex event_line("^  ([0-9]+:[0-9]+) .*?(?:^|  )([<>~|]) ([^ ]+)(.*)$");
  std::vector<ShownWindow> windows;
  std::istringstream lines(output);
  std::string line;
  bool in_window = false;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, header)) {
      ShownWindow window;
      window.header = line;
      window.id = std::stoull(match[1]);
      window.session = std::stoull(match[2]);
      windows.push_back(window);
      in_window = true;
    } else if (in_window && std::regex_search(line, match, event_line)) {
      windows.back().events.push_back({match[1], match[2].str()[0], match[3], match[4]});
    } else {
      in_window = false;
    }
  }
  return windows;
}

// sample_service --record: "TID REQ FUNC ARG..." per traced call, in order.
struct RecordedCall {
  std::string function;
  std::vector<uint64_t> arguments;
};

inline std::map<std::pair<uint64_t, uint64_t>, std::vector<RecordedCall>> read_sample_record(const std::string& path) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<RecordedCall>> requests;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    uint64_t tid, request;
    RecordedCall call;
    if (!(fields >> tid >> request >> call.function)) continue;
    std::string value;
    while (fields >> value) call.arguments.push_back(std::stoull(value, nullptr, 16));
    requests[{tid, request}].push_back(call);
  }
  return requests;
}

// The record file of one test, removed at the end.
struct TempFile {
  explicit TempFile(const std::string& name) : path("/tmp/xref-lldb-" + name + "-" + std::to_string(getpid())) {
    unlink(path.c_str());
  }
  ~TempFile() { unlink(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string path;
};

// Kills the helper of the running lldb from inside it (SIGKILL), through
// its own `xref helper` report of the helper's pid.
inline std::string kill_helper_command() {
  return "script r = lldb.SBCommandReturnObject(); "
         "lldb.debugger.GetCommandInterpreter().HandleCommand('xref helper', r); "
         "import os, re, signal, time; os.kill(int(re.search(r'runs as pid (\\d+)', r.GetOutput()).group(1)), "
         "signal.SIGKILL); time.sleep(0.5)";
}

}  // namespace xref::test
