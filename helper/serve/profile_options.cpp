#include "serve/profile_options.h"

#include "profile/sampling_events.h"

namespace xref::serve {

void add_profile_session_options(CLI::App& command, DebuggerProfileOptions& options) {
  add_profile_options(command, options);
  // The capture goes to a file the helper owns unless --out names one.
  options.request.out.clear();
  command.get_option("--out")
      ->description("the capture file to write (default: a file of the helper's, shown at the stop; "
                    "`xref profile report` reads the last one)")
      ->default_str("");
  CLI::Option* until_stop =
      command.add_flag("--until-stop", options.until_stop,
                       "sample from now until the debugger's next stop (a breakpoint, a signal, Ctrl-C); the default "
                       "without --duration");
  until_stop->excludes(command.get_option("--duration"));
  until_stop->excludes(command.get_option("--duration-ms"));
}

Result<void> validate_profile_session(const ProfileRequest& request) {
  if (request.callers == "lbr") return lbr_refusal();
  return check_sampling_frequency(request.frequency_hz);
}

}  // namespace xref::serve
