#include "manual/man_pages.h"

#include <algorithm>
#include <cctype>

#include "manual/exit_statuses.h"
#include "manual/roff.h"

namespace xref::manual {
namespace {

constexpr const char* kProgram = "xref";

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

// The program's description starts with its name ("xref: ordered, ...");
// NAME says it once.
std::string one_line_summary(const CommandEntry& command) {
  std::string summary = command.description;
  const std::string prefix = std::string(kProgram) + ": ";
  if (summary.rfind(prefix, 0) == 0) summary = summary.substr(prefix.size());
  return summary;
}

std::string header(const CommandEntry& command, const ManualSite& site) {
  return ".TH " + roff_text(upper(page_name(command))) + " 1 \"\" \"" + kProgram + " " + roff_text(site.version) +
         "\" \"User Commands\"\n";
}

// Spaces that do not break the line ("[0 - 1000]" stays whole).
std::string unbroken(const std::string& roff) {
  std::string out;
  for (char c : roff) out += c == ' ' ? std::string("\\ ") : std::string(1, c);
  return out;
}

std::string section(const std::string& title) { return ".SH " + title + "\n"; }

// "-p, --pid PID" for an option, "address ..." for a positional.
std::string option_tag(const OptionEntry& option) {
  std::string tag;
  for (const std::string& name : option.names) tag += (tag.empty() ? "" : ", ") + roff_bold(name);
  if (option.names.empty()) tag = roff_italic(option.positional);
  if (!option.names.empty() && option.values > 0) tag += " " + roff_italic(option.value_name);
  if (option.repeats) tag += " ...";
  return tag;
}

std::string option_body(const OptionEntry& option) {
  std::string body = roff_text(option.help) + "\n";
  std::vector<std::string> facts;
  if (option.required) facts.push_back("Required.");
  if (!option.choices.empty()) {
    std::string values;
    for (const std::string& choice : option.choices) values += (values.empty() ? "" : ", ") + roff_bold(choice);
    facts.push_back("Values: " + values + ".");
  }
  if (!option.default_value.empty()) facts.push_back("Default: " + roff_bold(option.default_value) + ".");
  if (!option.value_range.empty()) facts.push_back("Range: " + unbroken(roff_text(option.value_range)) + ".");
  for (const std::string& other : option.excludes) facts.push_back("Not with " + roff_bold(other) + ".");
  for (const std::string& other : option.needs) facts.push_back("Needs " + roff_bold(other) + ".");
  if (!facts.empty()) {
    std::string line;
    for (const std::string& fact : facts) line += (line.empty() ? "" : " ") + fact;
    body += ".br\n" + line + "\n";
  }
  return body;
}

std::string synopsis(const CommandEntry& command) {
  std::string text = ".B " + roff_text(command.full_name(kProgram, ' ')) + "\n";
  std::string words;
  for (const OptionEntry& option : command.options) {
    if (option.names.empty() || !option.required) continue;
    words += roff_bold(option.long_name()) + " " + roff_italic(option.value_name) + " ";
  }
  words += "[" + roff_italic("OPTIONS") + "]";
  for (const OptionEntry& option : command.options) {
    if (!option.names.empty()) continue;
    const std::string name = roff_italic(option.positional) + (option.repeats ? " ..." : "");
    words += " " + (option.required ? name : "[" + name + "]");
  }
  text += words + "\n";
  if (!command.subcommands.empty()) {
    text += ".br\n.B " + roff_text(command.full_name(kProgram, ' ')) + "\n" + roff_italic("SUBCOMMAND") + " [" +
            roff_italic("OPTIONS") + "] ...\n";
  }
  return text;
}

std::string options_section(const CommandEntry& command, bool positionals) {
  std::string text;
  for (const OptionEntry& option : command.options) {
    if (option.names.empty() != positionals) continue;
    text += ".TP\n" + option_tag(option) + "\n" + option_body(option);
  }
  if (text.empty()) return text;
  return section(positionals ? "ARGUMENTS" : "OPTIONS") + text;
}

std::string description_section(const CommandEntry& command) {
  std::string text = section("DESCRIPTION") + roff_text(one_line_summary(command)) + "\n";
  for (const std::string& paragraph : command.notes.paragraphs) text += ".PP\n" + roff_text(paragraph) + "\n";
  return text;
}

std::string commands_list(const std::vector<const CommandEntry*>& commands) {
  std::string text;
  for (const CommandEntry* command : commands) {
    text += ".TP\n" + roff_bold(command->full_name(kProgram, ' ')) + "\n" + roff_text(command->description) +
            "\n.br\nSee " + roff_bold(page_name(*command)) + "(1).\n";
  }
  return text;
}

std::string exit_status_section(const CommandEntry& command) {
  const std::vector<ExitStatus> statuses =
      command.notes.exit_statuses.empty() ? common_exit_statuses() : command.notes.exit_statuses;
  std::string text = section("EXIT STATUS");
  for (const ExitStatus& status : statuses) {
    text += ".TP\n" + roff_bold(std::to_string(status.status)) + "\n" + roff_text(status.meaning) + "\n";
  }
  return text;
}

std::string examples_section(const CommandEntry& command) {
  if (command.notes.examples.empty()) return "";
  std::string text = section("EXAMPLES");
  for (const Example& example : command.notes.examples) {
    text += ".PP\n" + roff_text(example.what) + "\n.PP\n.RS\n.nf\n" + roff_bold(example.command) + "\n.fi\n.RE\n";
  }
  return text;
}

std::string guide_of(const CommandEntry& command, const ManualSite& site) {
  if (command.path.empty()) return "";
  for (const auto& [name, guide] : site.guides) {
    if (name == command.path.front()) return site.doc_dir + "/" + guide;
  }
  return "";
}

// The pages around this one: the overview, its parent, its subcommands,
// its siblings; then its guide.
std::string see_also_section(const CommandEntry& command, const CommandEntry& root, const ManualSite& site) {
  std::vector<const CommandEntry*> related;
  for (const CommandEntry* other : all_commands(root)) {
    if (other == &command) continue;
    const bool overview = other->path.empty();
    const bool parent = !command.path.empty() && other->path.size() + 1 == command.path.size() &&
                        std::equal(other->path.begin(), other->path.end(), command.path.begin());
    const bool child = other->path.size() == command.path.size() + 1 &&
                       std::equal(command.path.begin(), command.path.end(), other->path.begin());
    const bool sibling = other->path.size() == command.path.size() && !command.path.empty() &&
                         std::equal(command.path.begin(), command.path.end() - 1, other->path.begin());
    if (overview || parent || child || sibling) related.push_back(other);
  }
  std::string text = section("SEE ALSO");
  for (size_t i = 0; i < related.size(); ++i) {
    text += ".BR " + roff_text(page_name(*related[i])) + " (1)" + (i + 1 < related.size() ? "," : "") + "\n";
  }
  if (const std::string guide = guide_of(command, site); !guide.empty()) {
    text += ".PP\nThe guide: " + roff_italic(guide) + "\n";
  } else if (command.path.empty()) {
    text += ".PP\nThe guides: " + roff_italic(site.doc_dir + "/") + "\n";
  }
  return text;
}

std::string pairs_section(const std::string& title, const std::vector<std::pair<std::string, std::string>>& pairs) {
  if (pairs.empty()) return "";
  std::string text = section(title);
  for (const auto& [name, meaning] : pairs) text += ".TP\n" + roff_bold(name) + "\n" + roff_text(meaning) + "\n";
  return text;
}

std::string overview_page(const CommandEntry& root, const ManualSite& site) {
  std::string text = header(root, site);
  text += section("NAME") + roff_text(std::string(kProgram) + " - " + one_line_summary(root)) + "\n";
  text += section("SYNOPSIS") + ".B " + kProgram + "\n" + roff_italic("COMMAND") + " [" + roff_italic("OPTIONS") +
          "] ...\n.br\n.B " + kProgram + "\n" + roff_bold("--help") + " | " + roff_bold("--version") + "\n";
  text += description_section(root);
  std::vector<const CommandEntry*> commands = all_commands(root);
  commands.erase(commands.begin());
  text += section("COMMANDS") + commands_list(commands);
  text += options_section(root, false);
  text += exit_status_section(root);
  text += pairs_section("ENVIRONMENT", site.environment);
  text += pairs_section("FILES", site.files);
  text += examples_section(root);
  text += see_also_section(root, root, site);
  return text;
}

std::string command_page(const CommandEntry& command, const CommandEntry& root, const ManualSite& site) {
  std::string text = header(command, site);
  text += section("NAME") + roff_text(page_name(command) + " - " + one_line_summary(command)) + "\n";
  text += section("SYNOPSIS") + synopsis(command);
  text += description_section(command);
  if (!command.subcommands.empty()) {
    std::vector<const CommandEntry*> subcommands;
    for (const CommandEntry& sub : command.subcommands) subcommands.push_back(&sub);
    text += section("SUBCOMMANDS") + commands_list(subcommands);
  }
  text += options_section(command, true);
  text += options_section(command, false);
  text += exit_status_section(command);
  text += examples_section(command);
  text += see_also_section(command, root, site);
  return text;
}

}  // namespace

std::string page_name(const CommandEntry& command) { return command.full_name(kProgram, '-'); }

std::vector<ManPage> man_pages(const CommandEntry& root, const ManualSite& site) {
  std::vector<ManPage> pages;
  for (const CommandEntry* command : all_commands(root)) {
    pages.push_back({page_name(*command) + ".1",
                     command->path.empty() ? overview_page(root, site) : command_page(*command, root, site)});
  }
  return pages;
}

}  // namespace xref::manual
