#include "attach/tracefs/owner.h"

#include <fstream>
#include <sstream>

#include "number_parse.h"
#include "process_identity.h"

namespace xref {
namespace {

std::optional<ProcessStat> stat_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::ostringstream text;
  if (!file || !(text << file.rdbuf())) return std::nullopt;
  auto stat = parse_proc_stat(text.str());
  if (!stat) return std::nullopt;
  return *stat;
}

std::optional<uint64_t> decimal(const std::string& digits, size_t max_digits) {
  if (digits.empty() || digits.size() > max_digits || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  auto value = parse_u64(digits, "number");
  return value ? std::optional<uint64_t>(*value) : std::nullopt;
}

}  // namespace

TracefsOwner tracefs_owner_of_process(pid_t pid) {
  const auto stat = stat_of(pid);
  return {pid, stat ? stat->starttime_ticks : 0};
}

std::string tracefs_group_name(const TracefsOwner& owner) {
  return "xref_" + std::to_string(owner.pid) + "_" + std::to_string(owner.start_ticks);
}

std::string tracefs_instance_name(const TracefsOwner& owner) {
  return "xref-" + std::to_string(owner.pid) + "-" + std::to_string(owner.start_ticks);
}

std::optional<TracefsOwner> tracefs_owner_in_name(const std::string& name, char separator) {
  const std::string prefix = std::string("xref") + separator;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string rest = name.substr(prefix.size());
  const size_t split = rest.find(separator);
  const auto pid = decimal(rest.substr(0, split), 9);
  if (!pid || *pid == 0) return std::nullopt;
  TracefsOwner owner{static_cast<pid_t>(*pid), 0};
  if (split == std::string::npos) return owner;
  const auto start = decimal(rest.substr(split + 1), 20);
  if (!start || *start == 0) return std::nullopt;
  owner.start_ticks = *start;
  return owner;
}

bool tracefs_owner_alive(const TracefsOwner& owner) {
  const auto stat = stat_of(owner.pid);
  if (!stat || stat->state == 'Z' || stat->state == 'X') return false;
  return owner.start_ticks == 0 || stat->starttime_ticks == owner.start_ticks;
}

}  // namespace xref
