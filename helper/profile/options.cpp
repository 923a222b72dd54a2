#include "command/option_values.h"
#include "profile/request.h"
#include "profile/sampling_events.h"

namespace xref {
namespace {

// Above perf_event_max_sample_rate is refused later with the host's own
// limit (frequency_too_high); this bound only keeps the number sane.
constexpr uint64_t kMaxFrequencyHz = 1000000;

}  // namespace

Result<void> validate_profile_request(const ProfileRequest& request) {
  if (request.out.empty()) {
    return make_error(ErrorCode::invalid_argument, "--out is empty", "give --out FILE, e.g. --out app.xprof");
  }
  return {};
}

void add_profile_options(CLI::App& command, ProfileCommandOptions& options) {
  ProfileRequest& request = options.request;
  add_process_options(command, options);
  add_duration_option(command, request.duration_ms, "sample for this long (0: until Ctrl-C or the target's exit)");
  command.add_option("--freq,--hz", request.frequency_hz,
                     "samples per second of each thread's CPU time (at most the host's "
                     "/proc/sys/kernel/perf_event_max_sample_rate)")
      ->capture_default_str()
      ->transform(number_in({1, kMaxFrequencyHz}));
  command.add_option("--callers", request.callers,
                     "how stacks are walked: dwarf (the modules' CFI, unwound in BPF: no frame pointers needed), fp "
                     "(frame-pointer chains), lbr (last-branch records, where the CPU has them), none (the sampled "
                     "pc only)")
      ->capture_default_str()
      ->check(one_of({"dwarf", "fp", "lbr", "none"}));
  command.add_option("--event", request.event,
                     "the sampling event as perf names it (default: cycles where the host has a hardware PMU, else "
                     "cpu-clock; a named event the host lacks is refused, never replaced)")
      ->check(one_of(sampling_event_names()));
  command.add_option("--threads", request.threads,
                     "sample only these threads of the process (and the threads they start): TID,TID,...")
      ->delimiter(',')
      ->type_name("TID,...")
      ->transform(number_in({1, kMaxPid}));
  command.add_option("--out,-o", request.out, "the capture file to write (read it with `xref profile report FILE`)")
      ->capture_default_str()
      ->type_name("FILE");
}

}  // namespace xref
