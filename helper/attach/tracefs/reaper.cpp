#include "attach/tracefs/reaper.h"

#include "attach/tracefs/groups.h"

namespace xref {

ReapReport reap_tracefs_leftovers(const Tracefs& tracefs, const TracefsOwner& self) {
  ReapReport report;
  auto left_over = [&self](const std::string& name, char separator) {
    const auto owner = tracefs_owner_in_name(name, separator);
    return owner && (owner->pid == self.pid || !tracefs_owner_alive(*owner));
  };
  // Instances first: removing one disables its events, so their uprobes
  // come out of the traced processes and the events can be deleted.
  for (const std::string& name : tracefs.list("instances")) {
    if (!left_over(name, '-')) continue;
    (void)tracefs.write("instances/" + name + "/tracing_on", "0");
    if (auto removed = tracefs.remove_directory("instances/" + name); removed) {
      report.instances.push_back(name);
    } else {
      report.failures.push_back(removed.error().message);
    }
  }
  for (const std::string& group : tracefs_uprobe_groups(tracefs)) {
    if (!left_over(group, '_')) continue;
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
