#include "cli/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "attach/libbpf_log.h"
#include "cli/command_line.h"
#include "command/option_values.h"
#include "command/usage_text.h"
#include "input/sudo_user.h"
#include "input/user_files.h"
#include "output/json_envelope.h"
#include "output/report.h"

namespace xref {
namespace {

// The predecessor spelled commands `xref [-b BIN] live CMD ...`; scripts
// written for it keep working: drop "live" and hand -b BIN to the command.
std::vector<std::string> rewrite_seed_spelling(std::vector<std::string> args) {
  std::vector<std::string> global_bin;
  size_t index = 1;
  while (index < args.size()) {
    if ((args[index] == "-b" || args[index] == "--bin") && index + 1 < args.size()) {
      global_bin = {"--bin", args[index + 1]};
      index += 2;
    } else if (args[index].rfind("--bin=", 0) == 0) {
      global_bin = {"--bin", args[index].substr(6)};
      index += 1;
    } else {
      break;
    }
  }
  if (index >= args.size() || (args[index] != "live" && global_bin.empty())) return args;
  std::vector<std::string> rewritten{args[0]};
  size_t rest = args[index] == "live" ? index + 1 : index;
  rewritten.insert(rewritten.end(), args.begin() + static_cast<long>(rest), args.end());
  rewritten.insert(rewritten.end(), global_bin.begin(), global_bin.end());
  return rewritten;
}

bool wants_json(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (arg == "--json") return true;
  }
  return false;
}

std::string operation_for(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "trace" && i + 1 < args.size() && args[i + 1] == "diff") return "trace_diff";
    if (args[i] == "trace" && i + 1 < args.size() && args[i + 1] == "show") return "trace_show";
    if (args[i] == "profile" && i + 1 < args.size() &&
        (args[i + 1] == "report" || args[i + 1] == "annotate" || args[i + 1] == "diff")) {
      return "profile_" + args[i + 1];
    }
    if (args[i] == "maps" || args[i] == "resolve" || args[i] == "memscan" || args[i] == "trace" ||
        args[i] == "probe" || args[i] == "watch" || args[i] == "profile") {
      return "live_" + args[i];
    }
    if (args[i] == "doctor") return args[i];
  }
  return "usage";
}

// An error before any command ran: the JSON error object under --json,
// else one line on stderr.
int report_cli_error(const std::vector<std::string>& args, const Error& error) {
  if (wants_json(args)) {
    Envelope envelope;
    envelope.operation = operation_for(args);
    envelope.error = error;
    std::cout << json_text(envelope_json(envelope)) << std::endl;
  } else {
    std::cerr << error_line(error) << std::endl;
  }
  return error_exit_status(error.code);
}

// Before any command (docs/cli.md, "Privileges"). A set-user-ID or
// set-group-ID copy would lend its owner's rights to whoever runs it, so it
// refuses. Under sudo, the files the user names are opened with the user's
// own rights from here on, by a process forked now, before any thread.
Result<void> settle_privileges() {
  if (getuid() != geteuid() || getgid() != getegid()) {
    return make_error(ErrorCode::permission_denied, "xref refuses to run set-user-ID or set-group-ID",
                      "remove the bit (chmod u-s,g-s) and run xref as root, or through sudo "
                      "(e.g. `sudo -n xref serve`)");
  }
  auto user = sudo_user_from(std::getenv("SUDO_UID"), std::getenv("SUDO_GID"));
  if (!user) return user.error();
  if (*user) return act_for_sudo_user(**user);
  return {};
}

}  // namespace

int run_cli(int argc, char** argv) {
  std::vector<std::string> args = rewrite_seed_spelling(std::vector<std::string>(argv, argv + argc));
  if (auto settled = settle_privileges(); !settled) return report_cli_error(args, settled.error());
  configure_libbpf_logging();

  int exit_status = 0;
  std::unique_ptr<CLI::App> command_line = make_command_line(exit_status);
  CLI::App& app = *command_line;

  if (args.size() == 1) {
    std::cout << app.help();
    return 0;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& parse_error) {
    // Usage mistakes share the invalid_argument exit status and, under
    // --json, the error object of every other failure.
    return report_cli_error(args, usage_error(parse_error, app));
  }
  return exit_status;
}

}  // namespace xref
