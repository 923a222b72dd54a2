// What tracefs holds for xref helpers, read the way an administrator would:
// the event groups in uprobe_events, the instances, a helper's watchdog
// process, and where its uprobes sit. A helper's group and instance carry
// its PID and start time: xref_<PID>_<start>, xref-<PID>-<start>.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "command_output.h"
#include "probed_code.h"

namespace xref::test {

const std::string kTracefs = "/sys/kernel/tracing";

inline bool tracefs_usable() { return geteuid() == 0 && access((kTracefs + "/uprobe_events").c_str(), W_OK) == 0; }

inline std::string uprobe_events() { return command_output("cat " + kTracefs + "/uprobe_events"); }

// The instance of `helper` ("xref-4242-81234"), or "" when it has none.
inline std::string instance_of(pid_t helper) {
  const std::string prefix = "xref-" + std::to_string(helper) + "-";
  for (const auto& name : command_lines("ls " + kTracefs + "/instances")) {
    if (name.rfind(prefix, 0) == 0) return name;
  }
  return "";
}

inline bool instance_exists(pid_t helper) { return !instance_of(helper).empty(); }

// The uprobe_events lines of `helper`'s group.
inline std::vector<std::string> events_of(pid_t helper) {
  std::vector<std::string> lines;
  const std::string group = ":xref_" + std::to_string(helper) + "_";
  for (const auto& line : command_lines("cat " + kTracefs + "/uprobe_events")) {
    if (line.find(group) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

inline bool group_defined(pid_t helper) { return !events_of(helper).empty(); }

// Any xref instance or event group at all.
inline std::string xref_leftovers() {
  std::string found;
  for (const auto& line : command_lines("ls " + kTracefs + "/instances")) {
    if (line.rfind("xref-", 0) == 0) found += "instance " + line + "\n";
  }
  for (const auto& line : command_lines("cat " + kTracefs + "/uprobe_events")) {
    if (line.find(":xref_") != std::string::npos) found += "event " + line + "\n";
  }
  return found;
}

// Where `helper`'s uprobes are: "p:xref_P_S/p0 /path/to/exe:0x1e50 sp=%sp ..."
// gives the file and its offset (the traced executable's probes only).
struct TracefsProbes {
  std::string path;
  std::vector<uint64_t> offsets;
};

inline TracefsProbes probes_of(pid_t helper, const std::string& path) {
  TracefsProbes probes{path, {}};
  for (const auto& line : events_of(helper)) {
    std::istringstream fields(line);
    std::string name, location;
    if (!(fields >> name >> location)) continue;
    const size_t colon = location.rfind(':');
    if (colon == std::string::npos || location.substr(0, colon) != path) continue;
    probes.offsets.push_back(std::stoull(location.substr(colon + 1), nullptr, 16));
  }
  return probes;
}

// The watchdog `helper` forked for its tracefs trace (comm xref-watchdog,
// parent `helper`), or 0.
inline pid_t watchdog_of(pid_t helper) {
  DIR* proc = opendir("/proc");
  pid_t found = 0;
  while (dirent* entry = proc ? readdir(proc) : nullptr) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + name + "/stat");
    std::string text;
    std::getline(stat, text);
    const size_t open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (text.substr(open + 1, close - open - 1) == "xref-watchdog" && parent == helper) found = std::stoi(name);
  }
  if (proc) closedir(proc);
  return found;
}

// Polls `done` every 20 ms, up to `cap_seconds` (a cap for a stuck run,
// not a measure of speed); whether it became true.
inline bool eventually(const std::function<bool()>& done, int cap_seconds = 60) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(cap_seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Starts `xref ARGS...` (or another copy of it) with its output thrown away.
inline pid_t spawn_xref(const std::vector<std::string>& args, const std::string& binary = XREF_BINARY) {
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return child;
}

// Once `helper`'s events are enabled in its instance and it records (a new
// instance records at once, before xref turns it off to set it up).
inline bool await_tracing(pid_t helper) {
  return eventually([&] {
    const std::string instance = instance_of(helper);  // xref-PID-START
    if (instance.empty()) return false;
    std::string group = instance;                        // xref_PID_START
    std::replace(group.begin(), group.end(), '-', '_');
    auto state = try_command_lines("cat " + kTracefs + "/instances/" + instance + "/events/" + group + "/enable " +
                                   kTracefs + "/instances/" + instance + "/tracing_on 2>/dev/null");
    return state && state->size() >= 2 && (*state)[0] == "1" && (*state)[1] == "1";
  });
}

// Where `helper` has probes in `path`, checked to be in the target's code
// now: at least one probed byte differs from the file (the int3).
inline TracefsProbes expect_probes_in(pid_t helper, pid_t target, const std::string& path) {
  const TracefsProbes probes = probes_of(helper, path);
  EXPECT_FALSE(probes.offsets.empty()) << "no uprobe event of helper " << helper << " in " << path;
  const CodeBytes bytes = code_bytes(target, probes.path, probes.offsets);
  EXPECT_NE(bytes.in_memory, bytes.in_file) << "the probes should show in the target's code";
  return probes;
}

// After `helper` died: its events, its instance and its watchdog go, and
// every probed byte of the target reads back as in the file.
inline void expect_all_removed(pid_t helper, pid_t watchdog, pid_t target, const TracefsProbes& probes) {
  EXPECT_TRUE(eventually([&] { return !group_defined(helper); })) << uprobe_events();
  EXPECT_TRUE(eventually([&] { return !instance_exists(helper); })) << instance_of(helper);
  EXPECT_TRUE(eventually([&] { return code_bytes(target, probes.path, probes.offsets).in_memory ==
                                      code_bytes(target, probes.path, probes.offsets).in_file; }));
  const CodeBytes bytes = code_bytes(target, probes.path, probes.offsets);
  EXPECT_EQ(bytes.in_memory, bytes.in_file) << "a probed instruction still differs from the file";
  for (int byte : bytes.in_memory) EXPECT_NE(byte, 0xcc);
  EXPECT_TRUE(eventually([&] { return kill(watchdog, 0) != 0; })) << "the watchdog " << watchdog << " stays";
  EXPECT_EQ(kill(target, 0), 0) << "the target runs on";
}

}  // namespace xref::test
