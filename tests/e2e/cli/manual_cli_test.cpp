// The man pages and the bash completion script the built xref writes from
// its CLI11 app, checked by their real readers: groff and man render every
// page without a warning, and a real bash, given the words as its
// completion machinery gives them (COMP_LINE, COMP_POINT, COMP_WORDS,
// COMP_CWORD), completes commands, options, PIDs of running processes,
// files, fixed values and function names of the target. Once without the
// bash-completion package, once with it loaded first.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "command_output.h"
#include "run_xref.h"
#include "sample_target.h"

namespace xref::test {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "xref-" + name + "-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> pages_in(const std::string& dir) {
  std::vector<std::string> pages;
  for (const auto& entry : fs::directory_iterator(dir)) pages.push_back(entry.path().filename().string());
  std::sort(pages.begin(), pages.end());
  return pages;
}

TEST(ManualCli, EveryPageRendersWithoutWarnings) {
  const std::string dir = temp_dir("man");
  std::ofstream(dir + "/xref-gone.1") << ".TH GONE 1\n";  // a page of a command that is no more
  const XrefRun generated = run_xref({"_generate", "man", dir, "--doc-dir", "/usr/share/doc/xref"});
  ASSERT_EQ(generated.exit_status, 0) << generated.err;
  const std::vector<std::string> pages = pages_in(dir);
  for (const std::string expected : {"xref.1", "xref-trace.1", "xref-trace-diff.1", "xref-trace-show.1",
                                     "xref-trace-export.1", "xref-probe.1", "xref-maps.1", "xref-resolve.1",
                                     "xref-memscan.1", "xref-doctor.1", "xref-serve.1", "xref-completion.1",
                                     "xref-watch.1", "xref-profile.1", "xref-profile-report.1",
                                     "xref-profile-annotate.1", "xref-profile-diff.1"}) {
    EXPECT_NE(std::find(pages.begin(), pages.end(), expected), pages.end()) << expected;
  }
  EXPECT_EQ(std::find(pages.begin(), pages.end(), "xref-gone.1"), pages.end());
  EXPECT_EQ(pages.size(), 17u);
  for (const std::string& page : pages) {
    const std::string path = shell_quote(dir + "/" + page);
    EXPECT_EQ(command_output("groff -man -ww -z " + path + " 2>&1"), "") << page;
    EXPECT_EQ(command_output("MANWIDTH=80 man --warnings -l " + path + " 2>&1 >/dev/null"), "") << page;
    const std::string rendered = command_output("MANWIDTH=80 man -l " + path + " 2>/dev/null");
    for (const std::string section : {"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"}) {
      EXPECT_NE(rendered.find("\n" + section + "\n"), std::string::npos) << page << " has no " << section;
    }
  }
  // What a reader sees: options as typed (ASCII hyphens), the guide's path.
  const std::string trace = command_output("MANWIDTH=80 man -l " + shell_quote(dir + "/xref-trace.1") + " 2>/dev/null");
  EXPECT_NE(trace.find("-p, --pid PID"), std::string::npos) << trace;
  EXPECT_NE(trace.find("/usr/share/doc/xref/trace.md"), std::string::npos);
  const std::string probe = command_output("MANWIDTH=80 man -l " + shell_quote(dir + "/xref-probe.1") + " 2>/dev/null");
  EXPECT_NE(probe.find("xref probe --pid 3158 validate apply_fee --callers"), std::string::npos) << probe;
  fs::remove_all(dir);
}

// Completion as bash runs it: the script sourced, the words of `line` with
// the cursor at its end, _xref called; COMPREPLY, one reply a line.
class Completion {
 public:
  Completion() {
    const XrefRun printed = run_xref({"completion", "bash"});
    EXPECT_EQ(printed.exit_status, 0) << printed.err;
    std::ofstream(script_) << printed.out;
    const XrefRun written = run_xref({"_generate", "bash-completion", generated_});
    EXPECT_EQ(written.exit_status, 0) << written.err;
    EXPECT_EQ(read_file(generated_), printed.out);
  }
  ~Completion() { fs::remove_all(dir_); }

  std::set<std::string> replies(const std::string& line, bool with_bash_completion, const std::string& cwd = "/") {
    std::string program =
        std::string(with_bash_completion ? "source /usr/share/bash-completion/bash_completion || exit 9\n" : "") +
        "source " + shell_quote(script_) + "\n" +
        "[[ $(complete -p xref) == 'complete -F _xref xref' ]] || exit 8\n"
        "COMP_LINE=$LINE COMP_POINT=${#LINE}\n"
        "read -ra COMP_WORDS <<<\"$COMP_LINE\"\n"
        "[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')\n"
        "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        "_xref\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    const std::string command = "cd " + shell_quote(cwd) + " && PATH=" +
                                shell_quote(fs::path(XREF_BINARY).parent_path().string()) + ":$PATH LINE=" +
                                shell_quote(line) + " bash --norc --noprofile -c " + shell_quote(program);
    std::set<std::string> out;
    for (const std::string& reply : command_lines(command)) {
      if (!reply.empty()) out.insert(reply);
    }
    return out;
  }

  std::string dir() const { return dir_; }

 private:
  std::string dir_ = temp_dir("completion");
  std::string script_ = dir_ + "/xref";
  std::string generated_ = dir_ + "/generated";
};

using Replies = std::set<std::string>;

class ManualCompletion : public ::testing::TestWithParam<bool> {};

TEST_P(ManualCompletion, CommandsOptionsAndFixedValues) {
  Completion completion;
  const bool bc = GetParam();
  EXPECT_EQ(completion.replies("xref tr", bc), Replies({"trace"}));
  EXPECT_EQ(completion.replies("xref trace --fun", bc), Replies({"--functions"}));
  EXPECT_EQ(completion.replies("xref trace d", bc), Replies({"diff"}));
  EXPECT_EQ(completion.replies("xref trace --max-w", bc), Replies({"--max-windows"}));
  EXPECT_EQ(completion.replies("xref probe -", bc).count("-p"), 1u);
  EXPECT_EQ(completion.replies("xref trace --backend ", bc),
            Replies({"auto", "uprobe_multi", "perf_uprobe", "tracefs"}));
  // Bash replaces what follows the '=': the reply is the value alone.
  EXPECT_EQ(completion.replies("xref probe --backend=perf", bc), Replies({"perf_uprobe"}));
  EXPECT_EQ(completion.replies("xref trace export saved.json --format ", bc), Replies({"chrome"}));
  EXPECT_EQ(completion.replies("xref completion ", bc), Replies({"bash"}));
  // A flag takes no value: the next word is an option again.
  EXPECT_EQ(completion.replies("xref trace --json --jso", bc), Replies({"--json", "--jsonl"}));
  // After a repeating option's values, options again.
  EXPECT_EQ(completion.replies("xref trace --functions a b --stop-r", bc), Replies({"--stop-return"}));
  // Hidden commands are not offered.
  const Replies commands = completion.replies("xref ", bc);
  EXPECT_EQ(commands, Replies({"maps", "resolve", "memscan", "doctor", "trace", "probe", "watch", "profile", "serve", "completion"}));
}

TEST_P(ManualCompletion, FilesOfSavedTraces) {
  Completion completion;
  const bool bc = GetParam();
  const std::string dir = completion.dir() + "/traces";
  fs::create_directory(dir);
  std::ofstream(dir + "/even.json") << "{}";
  std::ofstream(dir + "/odd.jsonl") << "{}";
  EXPECT_EQ(completion.replies("xref trace diff ", bc, dir).count("even.json"), 1u);
  EXPECT_EQ(completion.replies("xref trace diff even.json o", bc, dir), Replies({"odd.jsonl"}));
  EXPECT_EQ(completion.replies("xref trace show ev", bc, dir), Replies({"even.json"}));
  EXPECT_EQ(completion.replies("xref trace export odd.jsonl -o ev", bc, dir), Replies({"even.json"}));
  EXPECT_EQ(completion.replies("xref maps --pid 1 --bin " + dir + "/od", bc), Replies({dir + "/odd.jsonl"}));
}

TEST_P(ManualCompletion, PidsAndFunctionNamesOfARunningProcess) {
  SampleTarget target;
  Completion completion;
  const bool bc = GetParam();
  EXPECT_EQ(completion.replies("xref probe --pid ", bc).count(target.pid()), 1u);
  EXPECT_EQ(completion.replies("xref maps -p " + target.pid().substr(0, target.pid().size() - 1), bc).count(target.pid()),
            1u);
  // Function names, from the target the --pid on the line names: the
  // sample service's own (nm), and a library's after "module:".
  ASSERT_TRUE(target.nm.count("validate"));
  EXPECT_EQ(completion.replies("xref probe --pid " + target.pid() + " vali", bc).count("validate"), 1u);
  EXPECT_EQ(completion.replies("xref trace --pid=" + target.pid() + " --start handle_r", bc),
            Replies({"handle_request"}));
  EXPECT_EQ(completion.replies("xref trace -p " + target.pid() + " --functions validate apply_", bc),
            Replies({"apply_fee"}));
  // Bash replaces what follows the ':' of module:function.
  EXPECT_EQ(completion.replies("xref probe --pid " + target.pid() + " libc.so.6:mallo", bc).count("malloc"), 1u);
  // No --pid on the line: nothing to ask.
  EXPECT_EQ(completion.replies("xref probe vali", bc), Replies());
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutBashCompletion, ManualCompletion, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "WithBashCompletion" : "Alone";
                         });

}  // namespace
}  // namespace xref::test
