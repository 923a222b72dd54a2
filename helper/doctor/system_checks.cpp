// Doctor checks that need no BPF: privileges, BTF, tracefs and the tracefs
// trace backend.
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "attach/tracefs/fs.h"
#include "attach/tracefs/instance.h"
#include "attach/tracefs/owner.h"
#include "doctor/checks.h"

namespace xref {
namespace {

constexpr long kTracefsMagic = 0x74726163;
constexpr const char* kTracefsPath = "/sys/kernel/tracing";
// The trial instance's ring buffer per CPU: small (the kernel rounds it up),
// since only its set-up is tried.
constexpr uint64_t kTrialInstanceKb = 4;

uint64_t effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

bool is_tracefs(const char* path) {
  struct statfs info;
  return statfs(path, &info) == 0 && info.f_type == kTracefsMagic;
}

}  // namespace

void check_privileges(DoctorReport& report) {
  const uint64_t caps = effective_capabilities();
  auto has = [&](int bit) { return (caps >> bit) & 1u; };
  std::ostringstream detail;
  detail << "euid " << geteuid() << ", CAP_SYS_ADMIN " << (has(21) ? "yes" : "no") << ", CAP_PERFMON "
         << (has(38) ? "yes" : "no") << ", CAP_BPF " << (has(39) ? "yes" : "no");
  const bool enough = has(21) || (has(38) && has(39));
  report.checks.push_back({"privileges", enough ? CheckStatus::ok : CheckStatus::missing, detail.str(),
                           enough ? "" : "run the helper as root, or grant it CAP_BPF and CAP_PERFMON"});
}

void check_btf(DoctorReport& report) {
  struct btf* vmlinux = btf__load_vmlinux_btf();
  if (vmlinux == nullptr) {
    report.checks.push_back({"btf", CheckStatus::missing, "/sys/kernel/btf/vmlinux could not be loaded",
                             "the kernel needs CONFIG_DEBUG_INFO_BTF"});
    return;
  }
  const uint32_t types = btf__type_cnt(vmlinux);
  btf__free(vmlinux);
  report.checks.push_back({"btf", CheckStatus::ok, "kernel BTF loaded (" + std::to_string(types) + " types)", ""});
}

void check_tracefs(DoctorReport& report) {
  std::string how = "already mounted";
  if (!is_tracefs(kTracefsPath)) {
    if (geteuid() != 0) {
      report.checks.push_back({"tracefs", CheckStatus::missing, std::string(kTracefsPath) + " is not mounted",
                               "as root: mount -t tracefs nodev /sys/kernel/tracing"});
      return;
    }
    if (mount("nodev", kTracefsPath, "tracefs", 0, nullptr) != 0) {
      report.checks.push_back({"tracefs", CheckStatus::failed,
                               std::string("mount -t tracefs on ") + kTracefsPath + " failed: " + std::strerror(errno),
                               "mount it by hand: mount -t tracefs nodev /sys/kernel/tracing"});
      return;
    }
    how = "mounted by xref doctor";
  }
  const std::string events = std::string(kTracefsPath) + "/uprobe_events";
  if (access(events.c_str(), W_OK) != 0) {
    report.checks.push_back({"tracefs", CheckStatus::failed, events + " is not writable: " + std::strerror(errno),
                             "run as root; the tracefs backend writes uprobe_events"});
    return;
  }
  report.checks.push_back({"tracefs", CheckStatus::ok, std::string(kTracefsPath) + " " + how + ", uprobe_events writable", ""});
}

void check_tracefs_backend(DoctorReport& report) {
  const char* const name = "tracefs_backend";
  // What `xref trace --backend tracefs` needs, in the order it needs it:
  // a mounted tracefs with uprobe_events (check_tracefs, run before this,
  // mounts tracefs when it can), ...
  auto tracefs = Tracefs::open();
  if (!tracefs) {
    const bool denied = tracefs.error().code == ErrorCode::permission_denied;
    report.checks.push_back({name, denied ? CheckStatus::failed : CheckStatus::missing, tracefs.error().message,
                             tracefs.error().hint});
    return;
  }
  // ... uprobe_events writable, for its probes ...
  const std::string events = tracefs->path("uprobe_events");
  if (access(events.c_str(), W_OK) != 0) {
    report.checks.push_back({name, CheckStatus::failed, events + " is not writable: " + std::strerror(errno),
                             "run as root; --backend tracefs defines its probes in uprobe_events"});
    return;
  }
  // ... and a private ftrace instance to record into, tried for real: made
  // and configured (mono clock, buffer size, overwrite off) as the backend
  // does, under the name a trace of this PID would use, then removed. A
  // doctor killed in between leaves it to the next trace's reaper.
  const std::string trial = tracefs_instance_name(tracefs_owner_of_process(getpid()));
  auto instance = TracefsInstance::create(*tracefs, trial, kTrialInstanceKb);
  if (!instance) {
    const Error& error = instance.error();
    report.checks.push_back({name, error.code == ErrorCode::unsupported ? CheckStatus::missing : CheckStatus::failed,
                             "cannot set up an ftrace instance: " + error.message,
                             error.hint.empty() ? "--backend tracefs records into its own instance under " +
                                                      tracefs->path("instances")
                                                : error.hint});
    return;
  }
  if (auto removed = instance->remove(); !removed) {
    report.checks.push_back({name, CheckStatus::failed,
                             "created " + instance->directory() + " but cannot remove it: " + removed.error().message,
                             "remove it by hand: rmdir " + instance->directory()});
    return;
  }
  report.checks.push_back({name, CheckStatus::ok,
                           tracefs->root() + ": uprobe_events writable, " + instance->relative() +
                               " created (mono clock) and removed; --backend tracefs only, auto never picks it",
                           ""});
}

}  // namespace xref
