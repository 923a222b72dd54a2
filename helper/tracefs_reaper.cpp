#include "tracefs_reaper.h"

#include <sys/stat.h>

#include <fstream>

#include "tracefs_probes.h"

namespace xref {

bool is_live_xref_helper(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream comm(proc + "/comm");
  std::string name;
  if (!comm || !std::getline(comm, name)) return false;
  if (name == "xref") return true;
  // A helper started under another name: it runs this very executable.
  struct stat theirs, ours;
  return stat((proc + "/exe").c_str(), &theirs) == 0 && stat("/proc/self/exe", &ours) == 0 &&
         theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
}

pid_t xref_owner_pid(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(digits));
}

ReapReport reap_tracefs_leftovers(const Tracefs& tracefs, pid_t self) {
  ReapReport report;
  auto dead = [self](pid_t pid) { return pid > 0 && (pid == self || !is_live_xref_helper(pid)); };
  // Instances first: removing one disables its events, so their uprobes
  // come out of the traced processes and the events can be deleted.
  for (const std::string& name : tracefs.list("instances")) {
    if (!dead(xref_owner_pid(name, "xref-"))) continue;
    (void)tracefs.write("instances/" + name + "/tracing_on", "0");
    if (auto removed = tracefs.remove_directory("instances/" + name); removed) {
      report.instances.push_back(name);
    } else {
      report.failures.push_back(removed.error().message);
    }
  }
  for (const std::string& group : tracefs_uprobe_groups(tracefs)) {
    if (!dead(xref_owner_pid(group, "xref_"))) continue;
    const GroupRemoval removal = remove_tracefs_group(tracefs, group);
    if (removal.failed == 0) {
      report.groups.push_back(group);
    } else {
      report.failures.push_back(group + ": " + std::to_string(removal.failed) +
                                " events still defined: " + removal.first_error);
    }
  }
  return report;
}

}  // namespace xref
