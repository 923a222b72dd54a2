#include "attach/tracefs/groups.h"

#include <set>
#include <sstream>
#include <utility>

namespace xref {
namespace {

// "p:xref_4242/p0 ..." -> {"xref_4242", "p0"}
std::pair<std::string, std::string> event_of_line(const std::string& line) {
  const size_t colon = line.find(':');
  const size_t slash = line.find('/');
  if (colon == std::string::npos || slash == std::string::npos || slash < colon) return {};
  size_t end = line.find_first_of(" \t", slash);
  if (end == std::string::npos) end = line.size();
  return {line.substr(colon + 1, slash - colon - 1), line.substr(slash + 1, end - slash - 1)};
}

// The non-empty lines of `text`.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::vector<std::string> tracefs_uprobe_groups(const Tracefs& tracefs) {
  std::set<std::string> groups;
  auto text = tracefs.read("uprobe_events");
  if (!text) return {};
  for (const std::string& line : lines_of(*text)) {
    const auto [group, event] = event_of_line(line);
    if (!group.empty()) groups.insert(group);
  }
  return {groups.begin(), groups.end()};
}

GroupRemoval remove_tracefs_group(const Tracefs& tracefs, const std::string& group) {
  GroupRemoval removal;
  auto text = tracefs.read("uprobe_events");
  if (!text) {
    removal.first_error = text.error().message;
    return removal;
  }
  // One write per event: a busy event must not keep the others defined.
  for (const std::string& line : lines_of(*text)) {
    const auto [line_group, event] = event_of_line(line);
    if (line_group != group || event.empty()) continue;
    if (auto removed = tracefs.append("uprobe_events", "-:" + group + "/" + event + "\n"); removed) {
      ++removal.removed;
    } else {
      ++removal.failed;
      if (removal.first_error.empty()) removal.first_error = removed.error().message;
    }
  }
  return removal;
}

}  // namespace xref
