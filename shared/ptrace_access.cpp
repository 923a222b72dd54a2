#include "ptrace_access.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace xref {
namespace {

constexpr int kCapSysPtrace = 19;

// The first number after `key` in /proc/PID/status, as text.
std::string status_field(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t start = line.find_first_not_of(" \t", key.size());
    if (start == std::string::npos) return {};
    return line.substr(start, line.find_first_of(" \t", start) - start);
  }
  return {};
}

PtraceAccessContext current_context(pid_t pid) {
  PtraceAccessContext context;
  context.root = geteuid() == 0;
  const std::string effective = status_field("/proc/self/status", "CapEff:");
  context.sys_ptrace = (std::strtoull(effective.c_str(), nullptr, 16) >> kCapSysPtrace) & 1;
  context.target_uid = status_field("/proc/" + std::to_string(pid) + "/status", "Uid:");
  context.same_user = !context.target_uid.empty() && context.target_uid == std::to_string(geteuid());
  return context;
}

}  // namespace

Error ptrace_access_denied(pid_t pid, const std::string& path, int error_number, const PtraceAccessContext& context) {
  const std::string what = "cannot read " + path + ": " + std::strerror(error_number);
  const std::string process = "process " + std::to_string(pid);
  if (context.root && context.sys_ptrace) {
    return make_error(ErrorCode::permission_denied, what + ", although xref runs as root with CAP_SYS_PTRACE",
                      "a security module or sandbox (Landlock, AppArmor, SELinux, a BPF LSM) keeps " + process +
                          " from xref; run xref outside it");
  }
  if (context.root) {
    return make_error(ErrorCode::permission_denied, what + ": xref runs as root without CAP_SYS_PTRACE",
                      "give xref CAP_SYS_PTRACE (a container may drop it)");
  }
  if (context.same_user) {
    return make_error(ErrorCode::permission_denied, what + ": the kernel refuses ptrace access to " + process +
                                                        " of your own user",
                      "the target is not dumpable (setuid, setcap, or PR_SET_DUMPABLE 0) or Yama's ptrace_scope "
                      "forbids it; run xref as root");
  }
  const bool known = !context.target_uid.empty();
  return make_error(ErrorCode::permission_denied,
                    what + ": " + process + " belongs to " + (known ? "uid " + context.target_uid : "another user"),
                    "run xref as root or as " + (known ? "uid " + context.target_uid : "the target's user"));
}

Error ptrace_access_denied(pid_t pid, const std::string& path, int error_number) {
  return ptrace_access_denied(pid, path, error_number, current_context(pid));
}

}  // namespace xref
