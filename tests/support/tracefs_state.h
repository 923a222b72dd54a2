// What tracefs holds for xref helpers, read the way an administrator would:
// the event groups in uprobe_events, the instances, a helper's watchdog
// process, and where its uprobes sit. A helper's group and instance carry
// its PID and start time: xref_<PID>_<start>, xref-<PID>-<start>.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

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

}  // namespace xref::test
