#include "input/sudo_user.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <string>

#include "number_parse.h"

namespace xref {
namespace {

// An id sudo wrote into the environment: nullopt when unset or empty.
Result<std::optional<uint32_t>> sudo_id(const char* value, const char* variable) {
  if (value == nullptr || *value == '\0') return std::optional<uint32_t>{};
  auto parsed = parse_u64(value, variable);
  if (!parsed || *parsed > 0xfffffffeu) {
    return make_error(ErrorCode::permission_denied, std::string(variable) + "='" + value + "' is not an id",
                      "start xref through sudo, or unset " + std::string(variable));
  }
  return std::optional<uint32_t>{static_cast<uint32_t>(*parsed)};
}

// The user's entry in the user database, if any (getpwuid_r: no shared buffer).
struct PasswdEntry {
  std::string name;
  gid_t gid = 0;
};

std::optional<PasswdEntry> passwd_entry(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) return std::nullopt;
  return PasswdEntry{entry.pw_name, entry.pw_gid};
}

std::vector<gid_t> supplementary_groups(const std::string& name, gid_t gid) {
  std::vector<gid_t> groups(64);
  for (;;) {
    int count = static_cast<int>(groups.size());
    if (getgrouplist(name.c_str(), gid, groups.data(), &count) >= 0) {
      groups.resize(static_cast<size_t>(count));
      return groups;
    }
    groups.resize(static_cast<size_t>(count) > groups.size() ? static_cast<size_t>(count) : groups.size() * 2);
  }
}

}  // namespace

Result<std::optional<uid_t>> requesting_uid_from_sudo(const char* sudo_uid) {
  auto uid = sudo_id(sudo_uid, "SUDO_UID");
  if (!uid) return uid.error();
  if (!*uid || **uid == 0) return std::optional<uid_t>{};
  return std::optional<uid_t>{**uid};
}

Result<std::optional<SudoUser>> sudo_user_from(const char* sudo_uid, const char* sudo_gid) {
  if (geteuid() != 0) return std::optional<SudoUser>{};  // no rights beyond the user's own to lend
  auto uid = requesting_uid_from_sudo(sudo_uid);
  if (!uid) return uid.error();
  if (!*uid) return std::optional<SudoUser>{};
  auto gid = sudo_id(sudo_gid, "SUDO_GID");
  if (!gid) return gid.error();
  const auto entry = passwd_entry(**uid);
  if (!*gid && !entry) {
    return make_error(ErrorCode::permission_denied,
                      "SUDO_UID is " + std::to_string(**uid) + " but SUDO_GID is not set and that uid has no passwd entry",
                      "start xref through sudo, which sets both");
  }
  SudoUser user;
  user.uid = **uid;
  user.gid = *gid ? **gid : entry->gid;
  user.groups = entry ? supplementary_groups(entry->name, user.gid) : std::vector<gid_t>{user.gid};
  return std::optional<SudoUser>{std::move(user)};
}

}  // namespace xref
