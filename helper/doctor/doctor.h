// What this host supports, found by trying each facility, not by reading
// version numbers: BPF load, uprobe_multi and perf uprobes firing on the
// helper's own code, ring buffer delivery, BTF, tracefs and the tracefs trace
// backend, hardware breakpoints that really count, hardware vs software perf
// events, privileges.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xref {

enum class CheckStatus { ok, missing, failed };

struct DoctorCheck {
  std::string name;    // stable key: "bpf_load", "uprobe_multi", ...
  CheckStatus status = CheckStatus::failed;
  std::string detail;  // what was tried and what happened
  std::string hint;    // what to do when it is not ok
};

struct DoctorReport {
  std::string kernel_release;
  std::vector<DoctorCheck> checks;
  const DoctorCheck* find(const std::string& name) const;
};

// Runs every check. May mount tracefs when running as root and it is absent.
DoctorReport run_doctor();
nlohmann::json doctor_json(const DoctorReport& report);
const char* check_status_name(CheckStatus status);

}  // namespace xref
