// The man pages and the completion script xref writes from its CLI11 app:
// every command and every option of the app the CLI parses with is in its
// page and in the script, hidden commands in neither, and text is escaped
// for roff. The app is walked here with CLI11's own calls, not through
// manual/command_tree, so a command the tree missed is caught.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "manual/bash_completion.h"
#include "manual/command_tree.h"
#include "manual/help_notes.h"
#include "manual/man_pages.h"
#include "manual/roff.h"
#include "result.h"

namespace xref {
namespace {

struct Command {
  std::vector<std::string> path;
  CLI::App* app;
};

// Every visible command under `app`, with its words.
void visible_commands(CLI::App* app, std::vector<std::string> path, std::vector<Command>& out) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    out.push_back({sub_path, sub});
    visible_commands(sub, sub_path, out);
  }
}

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

// "--pid" as a page spells it.
std::string roff_name(const std::string& name) { return manual::roff_text(name); }

class ManualTest : public ::testing::Test {
 protected:
  int exit_status = 0;
  std::unique_ptr<CLI::App> app = make_command_line(exit_status);
  std::vector<Command> commands = [this] {
    std::vector<Command> out;
    visible_commands(app.get(), {}, out);
    return out;
  }();
  std::map<std::string, std::string> pages = [this] {
    std::map<std::string, std::string> out;
    for (const manual::ManPage& page :
         manual::man_pages(manual::command_tree(*app), manual_site("/usr/share/doc/xref"))) {
      out[page.file_name] = page.text;
    }
    return out;
  }();
  std::string script = manual::bash_completion(manual::command_tree(*app), completion_site());

  // The script's entry for a command: its options, subcommands and positional kind.
  std::string script_entry(const std::vector<std::string>& path) {
    const std::string label = "    '" + joined(path, " ") + "')\n";
    const size_t at = script.find(label);
    if (at == std::string::npos) return "";
    return script.substr(at, script.find(";;", at) - at);
  }
};

TEST_F(ManualTest, TheCommandsAreThoseOfTheCli) {
  std::vector<std::string> names;
  for (const Command& command : commands) names.push_back(joined(command.path, " "));
  for (const std::string expected : {"trace", "trace diff", "trace show", "trace export", "probe", "profile", "maps", "resolve",
                                     "memscan", "doctor", "serve", "completion"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "_generate"), names.end());
}

TEST_F(ManualTest, EveryCommandHasAPageWithEveryOption) {
  EXPECT_EQ(pages.size(), commands.size() + 1);  // and xref.1
  ASSERT_TRUE(pages.count("xref.1"));
  for (const Command& command : commands) {
    const std::string name = "xref-" + joined(command.path, "-") + ".1";
    ASSERT_TRUE(pages.count(name)) << name;
    const std::string& page = pages[name];
    EXPECT_NE(page.find(".SH NAME\n" + roff_name("xref-" + joined(command.path, "-")) + " \\- "), std::string::npos)
        << name;
    EXPECT_NE(page.find(manual::roff_text(command.app->get_description())), std::string::npos) << name;
    for (const CLI::Option* option : command.app->get_options()) {
      for (const std::string& long_name : option->get_lnames()) {
        EXPECT_NE(page.find("\\fB" + roff_name("--" + long_name) + "\\fR"), std::string::npos)
            << name << " lacks --" << long_name;
      }
      for (const std::string& short_name : option->get_snames()) {
        EXPECT_NE(page.find("\\fB" + roff_name("-" + short_name) + "\\fR"), std::string::npos)
            << name << " lacks -" << short_name;
      }
      if (option->get_positional()) {
        EXPECT_NE(page.find("\\fI" + roff_name(option->get_name(true, false)) + "\\fR"), std::string::npos)
            << name << " lacks " << option->get_name(true, false);
      }
      EXPECT_NE(page.find(manual::roff_text(option->get_description())), std::string::npos)
          << name << ": " << option->get_description();
    }
    // The overview names every command.
    EXPECT_NE(pages["xref.1"].find("\\fB" + roff_name("xref " + joined(command.path, " ")) + "\\fR"),
              std::string::npos)
        << name;
    // Each page's examples are what its --help shows.
    for (const manual::Example& example : manual::parse_footer(command.app->get_footer()).examples) {
      EXPECT_NE(page.find(manual::roff_bold(example.command)), std::string::npos) << name << ": " << example.command;
    }
  }
  for (const auto& [name, page] : pages) EXPECT_EQ(page.find("_generate"), std::string::npos) << name;
}

TEST_F(ManualTest, EveryCommandHasExamplesInItsHelp) {
  for (const Command& command : commands) {
    EXPECT_FALSE(manual::parse_footer(command.app->get_footer()).examples.empty()) << joined(command.path, " ");
  }
}

TEST_F(ManualTest, ValuesTheCheckedOptionsTake) {
  const std::string& trace = pages["xref-trace.1"];
  EXPECT_NE(trace.find("Values: \\fBauto\\fR, \\fBuprobe_multi\\fR, \\fBperf_uprobe\\fR, \\fBtracefs\\fR."),
            std::string::npos);
  EXPECT_NE(trace.find("\\fB\\-p\\fR, \\fB\\-\\-pid\\fR \\fIPID\\fR"), std::string::npos);
  EXPECT_NE(pages["xref-probe.1"].find("Default: \\fB1000\\fR."), std::string::npos);  // --duration-ms
  EXPECT_NE(pages["xref-trace-show.1"].find("Needs \\fB\\-\\-tree\\fR."), std::string::npos);  // --depth
}

TEST_F(ManualTest, EveryExitStatusIsInTheOverview) {
  const std::string& overview = pages["xref.1"];
  for (int value = 0; value <= static_cast<int>(ErrorCode::empty_capture); ++value) {
    const auto code = static_cast<ErrorCode>(value);
    EXPECT_NE(overview.find(".TP\n\\fB" + std::to_string(error_exit_status(code)) + "\\fR\n"), std::string::npos)
        << error_code_name(code);
    EXPECT_NE(overview.find(manual::roff_text(error_code_name(code))), std::string::npos) << error_code_name(code);
  }
  // trace diff's are diff(1)'s, as its help says.
  const std::string& diff = pages["xref-trace-diff.1"];
  EXPECT_NE(diff.find(".TP\n\\fB1\\fR\nthey differ\n"), std::string::npos);
  EXPECT_EQ(diff.find("no_such_process"), std::string::npos);
}

TEST_F(ManualTest, EveryTopLevelCommandHasAGuideThatExists) {
  const manual::ManualSite site = manual_site("/usr/share/doc/xref");
  for (const Command& command : commands) {
    if (command.path.size() != 1) continue;
    const auto guide = std::find_if(site.guides.begin(), site.guides.end(),
                                    [&](const auto& entry) { return entry.first == command.path.front(); });
    ASSERT_NE(guide, site.guides.end()) << command.path.front();
    struct stat status{};
    EXPECT_EQ(stat((std::string(XREF_SOURCE_DIR) + "/docs/" + guide->second).c_str(), &status), 0) << guide->second;
    EXPECT_NE(pages["xref-" + command.path.front() + ".1"].find("/usr/share/doc/xref/" + guide->second),
              std::string::npos);
  }
}

TEST_F(ManualTest, EveryCommandAndOptionIsInTheCompletionScript) {
  const std::string root = script_entry({});
  for (const Command& command : commands) {
    const std::string name = joined(command.path, " ");
    const std::string entry = script_entry(command.path);
    ASSERT_FALSE(entry.empty()) << name;
    // Its parent offers it.
    std::vector<std::string> parent(command.path.begin(), command.path.end() - 1);
    const std::string parent_entry = script_entry(parent);
    const size_t subcommands = parent_entry.find("_xref_subcommands='");
    ASSERT_NE(subcommands, std::string::npos) << name;
    const std::string offered = " " + parent_entry.substr(subcommands + 19, parent_entry.find('\'', subcommands + 19) -
                                                                              subcommands - 19) + " ";
    EXPECT_NE(offered.find(" " + command.path.back() + " "), std::string::npos) << name;
    const size_t options_at = entry.find("_xref_options='");
    const std::string options = " " + entry.substr(options_at + 15, entry.find('\'', options_at + 15) - options_at - 15) + " ";
    for (const CLI::Option* option : command.app->get_options()) {
      for (const std::string& long_name : option->get_lnames()) {
        EXPECT_NE(options.find(" --" + long_name + " "), std::string::npos) << name << " --" << long_name;
      }
      for (const std::string& short_name : option->get_snames()) {
        EXPECT_NE(options.find(" -" + short_name + " "), std::string::npos) << name << " -" << short_name;
      }
    }
  }
  // The hidden commands are offered nowhere (the header comment names one).
  EXPECT_EQ(root.find("_generate"), std::string::npos);
  EXPECT_EQ(root.find("_complete"), std::string::npos);
  EXPECT_EQ(script.find("'_generate"), std::string::npos);
  EXPECT_EQ(script.find("'_complete"), std::string::npos);
}

TEST_F(ManualTest, CompletionKnowsWhatValuesAre) {
  EXPECT_NE(script.find("'trace -p'|'trace --pid') _xref_n=1 _xref_kind='pid' ;;"), std::string::npos);
  EXPECT_NE(script.find("'probe --mark-file') _xref_n=1 _xref_kind='file' ;;"), std::string::npos);
  EXPECT_NE(script.find("'trace --backend') _xref_n=1 _xref_kind='choice:auto uprobe_multi perf_uprobe tracefs' ;;"),
            std::string::npos);
  EXPECT_NE(script.find("'trace --functions') _xref_n='*' _xref_kind='code' ;;"), std::string::npos);
  EXPECT_NE(script_entry({"trace", "diff"}).find("_xref_positional='file'"), std::string::npos);
  EXPECT_NE(script_entry({"probe"}).find("_xref_positional='code'"), std::string::npos);
  // A flag takes no value: it is not among the options that do.
  EXPECT_EQ(script.find("'trace --json')"), std::string::npos);
}

TEST(Roff, EscapesWhatRoffWouldRead) {
  EXPECT_EQ(manual::roff_text("--pid"), "\\-\\-pid");
  EXPECT_EQ(manual::roff_text("a \\ b"), "a \\(rs b");
  EXPECT_EQ(manual::roff_text(".TH at the start\n'quoted line\nmid.dle 'x'"),
            "\\&.TH at the start\n\\&'quoted line\nmid.dle 'x'");
  EXPECT_EQ(manual::roff_text("id \xe2\x86\x92 42, caf\xc3\xa9"), "id \\[u2192] 42, caf\\[u00E9]");
  EXPECT_EQ(manual::roff_text("bad \xff byte"), "bad \\[uFFFD] byte");
  EXPECT_EQ(manual::roff_bold("--fetch 'id=+0(%di):u64'"), "\\fB\\-\\-fetch 'id=+0(%di):u64'\\fR");
}

TEST(HelpNotes, TheFooterReadsBackAsWritten) {
  manual::HelpNotes notes;
  notes.paragraphs = {"First paragraph.", "Second one."};
  notes.examples = {{"xref trace diff a.json b.json", "what differs"}, {"xref doctor", ""}};
  notes.exit_statuses = {{0, "equal"}, {1, "different"}};
  const manual::HelpNotes read = manual::parse_footer(manual::footer_text(notes));
  EXPECT_EQ(read.paragraphs, notes.paragraphs);
  ASSERT_EQ(read.examples.size(), 2u);
  EXPECT_EQ(read.examples[0].command, "xref trace diff a.json b.json");
  EXPECT_EQ(read.examples[0].what, "what differs");
  EXPECT_EQ(read.examples[1].command, "xref doctor");
  EXPECT_EQ(read.examples[1].what, "");
  ASSERT_EQ(read.exit_statuses.size(), 2u);
  EXPECT_EQ(read.exit_statuses[1].status, 1);
  EXPECT_EQ(read.exit_statuses[1].meaning, "different");
}

}  // namespace
}  // namespace xref
