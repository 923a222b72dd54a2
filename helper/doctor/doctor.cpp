#include "doctor/doctor.h"

#include <sys/utsname.h>

#include "doctor/checks.h"

namespace xref {

const char* check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::ok: return "ok";
    case CheckStatus::missing: return "missing";
    case CheckStatus::failed: return "failed";
  }
  return "failed";
}

const DoctorCheck* DoctorReport::find(const std::string& name) const {
  for (const auto& check : checks) {
    if (check.name == name) return &check;
  }
  return nullptr;
}

DoctorReport run_doctor() {
  DoctorReport report;
  struct utsname names;
  if (uname(&names) == 0) report.kernel_release = names.release;
  check_privileges(report);
  check_btf(report);
  check_bpf_uprobes(report);
  check_tracefs(report);
  check_tracefs_backend(report);
  check_mark_write_clock(report);
  check_perf_events(report);
  check_hardware_breakpoints(report);
  return report;
}

nlohmann::json doctor_json(const DoctorReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  nlohmann::json usable = nlohmann::json::object();
  for (const auto& check : report.checks) {
    checks.push_back({{"name", check.name},
                      {"status", check_status_name(check.status)},
                      {"detail", check.detail},
                      {"hint", check.hint}});
    usable[check.name] = check.status == CheckStatus::ok;
  }
  return {{"kernel_release", report.kernel_release}, {"usable", usable}, {"checks", checks}};
}

}  // namespace xref
