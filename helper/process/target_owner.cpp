#include "process/target_owner.h"

#include <fstream>
#include <sstream>
#include <string>

namespace xref {
namespace {

std::optional<uid_t> required_uid;

}  // namespace

void restrict_targets_to_uid(uid_t uid) { required_uid = uid; }

Result<void> check_owner_in_status(std::string_view status, pid_t pid, uid_t uid) {
  const std::string pid_text = std::to_string(pid);
  const size_t at = status.find("\nUid:");
  std::istringstream fields(std::string(status.substr(at == std::string_view::npos ? status.size() : at + 5)));
  unsigned long real = 0, effective = 0, saved = 0;
  if (at == std::string_view::npos || !(fields >> real >> effective >> saved)) {
    return make_error(ErrorCode::permission_denied, "cannot tell who owns process " + pid_text,
                      "/proc/" + pid_text + "/status has no Uid line");
  }
  if (real != uid || effective != uid || saved != uid) {
    return make_error(ErrorCode::permission_denied,
                      "process " + pid_text + " belongs to uid " + std::to_string(real == uid ? effective : real) +
                          ", not to uid " + std::to_string(uid) + " who started xref serve through sudo",
                      "xref serve under sudo only traces the sudo user's own processes");
  }
  return {};
}

Result<void> check_target_owner(pid_t pid) {
  if (!required_uid) return {};
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream file(path);
  std::ostringstream text;
  text << "\n" << file.rdbuf();  // the Uid line is looked up as "\nUid:"
  if (!file) return make_error(ErrorCode::process_exited, "process " + std::to_string(pid) + " exited");
  return check_owner_in_status(text.str(), pid, *required_uid);
}

}  // namespace xref
