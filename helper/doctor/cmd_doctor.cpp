// xref doctor: what this host can do for xref, found by trying.
#include <iomanip>
#include <ostream>

#include "doctor/commands.h"
#include "doctor/doctor.h"
#include "output/report.h"

namespace xref {

void setup_doctor(CLI::App& app, int& exit_status) {
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("doctor", "check what this host supports (BPF, uprobes, tracefs, perf)");
  command->add_flag("--json", *json, "print one JSON document");
  command->callback([json, &exit_status] {
    const DoctorReport doctor = run_doctor();
    Envelope envelope;
    envelope.operation = "doctor";
    envelope.data = doctor_json(doctor);
    exit_status = report({*json}, envelope, [&](std::ostream& out) {
      out << "kernel " << doctor.kernel_release << "\n";
      for (const auto& check : doctor.checks) {
        out << std::left << std::setw(22) << check.name << std::setw(8) << check_status_name(check.status)
            << check.detail << "\n";
        if (check.status != CheckStatus::ok && !check.hint.empty()) out << std::setw(30) << "" << "-> " << check.hint << "\n";
      }
    });
  });
}

}  // namespace xref
