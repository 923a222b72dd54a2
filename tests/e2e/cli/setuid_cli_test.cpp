// Every command refuses to run set-user-ID or set-group-ID (docs/cli.md,
// "Privileges"): a root-owned copy of xref with the bit set, run by nobody,
// must stop before doing anything, with exit status 9, one line on stderr
// (or the JSON error object with --json), and no file written. The same
// copy without the bit, run by nobody, shows that the commands and files
// used would work for nobody: the refusal is the bit's.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sample_target.h"
#include "saved_trace.h"
#include "trace_harness.h"

namespace xref::test {
namespace {

// A directory on a filesystem that honours set-user-ID bits (no nosuid).
std::optional<std::string> setuid_capable_directory() {
  const std::string build_dir = std::filesystem::path(XREF_BINARY).parent_path();
  for (const std::string& base : {std::string("/tmp"), build_dir}) {
    struct statvfs status {};
    if (statvfs(base.c_str(), &status) != 0 || (status.f_flag & ST_NOSUID)) continue;
    std::string name = base + "/xref-setuid-XXXXXX";
    if (mkdtemp(name.data()) == nullptr) continue;
    chmod(name.c_str(), 0755);
    return name;
  }
  return std::nullopt;
}

// Runs `program` as the user `uid` (no supplementary groups), like an
// unprivileged user running a copy of xref it found.
XrefRun run_as(uid_t uid, gid_t gid, const std::string& program, const std::vector<std::string>& args) {
  const auto become_user = [uid, gid] {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
  };
  return run_program(program, args, {become_user, nullptr});
}

bool wants_json(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

TEST(SetuidCli, EveryCommandRefusesSetuidAndSetgidAndWritesNothing) {
  XREF_REQUIRE(geteuid() == 0, "root, to make a set-user-ID copy owned by root");
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr) << "no user nobody";
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  const auto directory = setuid_capable_directory();
  XREF_REQUIRE(directory.has_value(), "a filesystem without nosuid for the set-user-ID copy (/tmp or the build dir)");
  const std::string copy = *directory + "/xref";
  std::filesystem::copy_file(XREF_BINARY, copy);
  ASSERT_EQ(chown(copy.c_str(), 0, 0), 0);
  const std::string trace = *directory + "/trace.json";
  std::ofstream(trace) << one_window_trace();
  chmod(trace.c_str(), 0644);
  // A directory nobody may write in, and a path only root may create.
  const std::string outputs = *directory + "/out";
  std::filesystem::create_directory(outputs);
  chmod(outputs.c_str(), 0777);
  const std::string user_output = outputs + "/chrome.json";
  const std::string root_output = "/etc/xref-setuid-test-" + std::to_string(getpid());

  SampleTarget target;
  const std::string pid = target.pid();
  const std::vector<std::vector<std::string>> commands = {
      {"maps", "--pid", pid},
      {"maps", "--pid", pid, "--json"},
      {"resolve", "--pid", pid, "0x1000", "--json"},
      {"memscan", "--pid", pid, "0x1", "--json"},
      {"doctor"},
      {"doctor", "--json"},
      {"trace", "--pid", pid, "--start", "handle_request", "--duration-ms", "100"},
      {"trace", "--pid", pid, "--start", "handle_request", "--duration-ms", "100", "--json"},
      {"trace", "show", trace},
      {"trace", "show", trace, "--json"},
      {"trace", "diff", trace, trace, "--json"},
      {"trace", "export", trace, "-o", user_output},
      {"trace", "export", trace, "-o", root_output},
      {"serve"},
      {"--version"},
  };
  for (const mode_t mode : {mode_t{04755}, mode_t{02755}}) {
    ASSERT_EQ(chmod(copy.c_str(), mode), 0);
    for (const auto& args : commands) {
      std::ostringstream what;
      what << std::oct << mode << " " << args[0] << " " << (args.size() > 1 ? args[1] : "");
      const XrefRun run = run_as(uid, gid, copy, args);
      EXPECT_EQ(run.exit_status, 9) << what.str() << ": " << run.err << run.out;
      if (wants_json(args)) {
        EXPECT_EQ(run.err, "") << what.str();
        const auto document = nlohmann::json::parse(run.out, nullptr, false);
        ASSERT_TRUE(document.is_object()) << what.str() << ": " << run.out;
        EXPECT_EQ(document["error"]["code"], "permission_denied") << what.str();
        EXPECT_EQ(document["error"]["exit_status"], 9) << what.str();
        EXPECT_EQ(document["error"]["message"], "xref refuses to run set-user-ID or set-group-ID") << what.str();
      } else {
        EXPECT_EQ(run.out, "") << what.str() << ": nothing on stdout (no hello line, no help)";
        EXPECT_EQ(run.err.rfind("xref: error: xref refuses to run set-user-ID or set-group-ID; remove the bit", 0), 0u)
            << what.str() << ": " << run.err;
        EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << what.str() << ": one line: " << run.err;
      }
      EXPECT_FALSE(std::filesystem::exists(user_output)) << what.str();
      EXPECT_FALSE(std::filesystem::exists(root_output)) << what.str();
    }
  }

  // Without the bit, nobody runs the same copy on the same files: the
  // refusals above were the bit's, and the export would have written.
  ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
  const XrefRun shown = run_as(uid, gid, copy, {"trace", "show", trace, "--json"});
  EXPECT_EQ(shown.exit_status, 0) << shown.err << shown.out;
  const XrefRun exported = run_as(uid, gid, copy, {"trace", "export", trace, "-o", user_output});
  EXPECT_EQ(exported.exit_status, 0) << exported.err;
  EXPECT_TRUE(std::filesystem::exists(user_output));
  const XrefRun to_etc = run_as(uid, gid, copy, {"trace", "export", trace, "-o", root_output});
  EXPECT_EQ(to_etc.exit_status, 9) << to_etc.err;
  EXPECT_FALSE(std::filesystem::exists(root_output));
  std::filesystem::remove(root_output);
  std::filesystem::remove_all(*directory);
}

}  // namespace
}  // namespace xref::test
