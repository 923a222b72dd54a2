// The individual doctor checks (doctor_*.cpp), each appending its results.
#pragma once

#include "doctor/doctor.h"

namespace xref {

void check_privileges(DoctorReport& report);
void check_btf(DoctorReport& report);
void check_bpf_uprobes(DoctorReport& report);  // bpf_load, ringbuf, perf_uprobe, uprobe_multi, attach_cookie
void check_tracefs(DoctorReport& report);
void check_tracefs_backend(DoctorReport& report);  // xref trace --backend tracefs; after check_tracefs
void check_mark_write_clock(DoctorReport& report);  // --mark-file's exact line times
void check_perf_events(DoctorReport& report);  // hardware vs software events
void check_hardware_breakpoints(DoctorReport& report);

}  // namespace xref
