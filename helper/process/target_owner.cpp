#include "process/target_owner.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <string>

#include "input/user_files.h"

namespace xref {
namespace {

// The real, effective and saved ids of a "\nUid:" or "\nGid:" line.
std::optional<std::array<unsigned long, 3>> ids_on_line(std::string_view status, std::string_view label) {
  const size_t at = status.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t end = status.find('\n', at + label.size());
  std::istringstream fields(std::string(status.substr(at + label.size(), end - at - label.size())));
  std::array<unsigned long, 3> ids{};
  if (!(fields >> ids[0] >> ids[1] >> ids[2])) return std::nullopt;
  return ids;
}

Error refused(pid_t pid, uid_t uid, const std::string& why) {
  const std::string user = "uid " + std::to_string(uid);
  return make_error(ErrorCode::sudo_user_cannot_ptrace,
                    "process " + std::to_string(pid) + " " + why + ": " + user +
                        ", who ran xref through sudo, could not ptrace it",
                    "under sudo xref opens only processes " + user +
                        " could ptrace itself (its own, with no set-user-ID or set-group-ID rights): trace one of "
                        "those, or have root run xref without sudo");
}

}  // namespace

Result<void> check_owner_in_status(std::string_view status, bool dumpable, pid_t pid, const SudoUser& user) {
  const std::string pid_text = std::to_string(pid);
  const auto uids = ids_on_line(status, "\nUid:");
  const auto gids = ids_on_line(status, "\nGid:");
  if (!uids || !gids) {
    return make_error(ErrorCode::permission_denied, "cannot tell who owns process " + pid_text,
                      "/proc/" + pid_text + "/status has no Uid or Gid line");
  }
  const auto [real, effective, saved] = *uids;
  if (real != user.uid) return refused(pid, user.uid, "belongs to uid " + std::to_string(real));
  const std::string own = "(uid " + std::to_string(real) + ")";
  if (effective != user.uid) return refused(pid, user.uid, own + " runs with effective uid " + std::to_string(effective));
  if (saved != user.uid) {
    return refused(pid, user.uid, own + " keeps saved uid " + std::to_string(saved) +
                                      ", set-user-ID rights it can take back");
  }
  const auto [real_gid, effective_gid, saved_gid] = *gids;
  if (effective_gid != real_gid || saved_gid != real_gid) {
    return refused(pid, user.uid, own + " has real, effective and saved gid " + std::to_string(real_gid) + ", " +
                                      std::to_string(effective_gid) + " and " + std::to_string(saved_gid) +
                                      " (set-group-ID)");
  }
  const bool member = real_gid == user.gid ||
                      std::find(user.groups.begin(), user.groups.end(), static_cast<gid_t>(real_gid)) != user.groups.end();
  if (!member) return refused(pid, user.uid, own + " runs as gid " + std::to_string(real_gid) + ", not one of the user's groups");
  if (!dumpable) {
    return refused(pid, user.uid, own + " is not dumpable (it changed its ids, or cleared PR_SET_DUMPABLE)");
  }
  return {};
}

Result<void> check_target_owner(pid_t pid) {
  const auto& user = acting_sudo_user();
  if (!user) return {};
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream file(proc + "/status");
  std::ostringstream text;
  text << "\n" << file.rdbuf();  // the lines are looked up as "\nUid:"
  // The kernel makes a process's private /proc files (not its directory)
  // root's while it is not dumpable, else its effective uid's.
  struct stat mem {};
  if (!file || stat((proc + "/mem").c_str(), &mem) != 0) {
    return make_error(ErrorCode::process_exited, "process " + std::to_string(pid) + " exited");
  }
  return check_owner_in_status(text.str(), mem.st_uid == user->uid, pid, *user);
}

}  // namespace xref
