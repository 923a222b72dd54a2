#include "manual/command_tree.h"

#include <algorithm>

#include "command/option_values.h"

namespace xref::manual {
namespace {

// CLI11 joins the type and each check's description with ':'
// ("INT:[1 - 16]", "UINT:UINT in [1 - 8192]"): the first part names the
// value, the rest says what it may be.
void split_type_name(const std::string& full, OptionEntry& entry) {
  const size_t colon = full.find(':');
  entry.value_name = full.substr(0, colon);
  if (colon == std::string::npos) return;
  std::string range = full.substr(colon + 1);
  // CLI::Range repeats the type: "UINT in [1 - 8192]".
  if (const size_t in = range.find(" in ["); in != std::string::npos) range = range.substr(in + 4);
  entry.value_range = range;
}

OptionEntry option_entry(CLI::Option& option) {
  OptionEntry entry;
  for (const std::string& name : option.get_snames()) entry.names.push_back("-" + name);
  for (const std::string& name : option.get_lnames()) entry.names.push_back("--" + name);
  if (option.get_positional()) entry.positional = option.get_name(true, false);
  entry.values = option.get_expected_max() == 0 ? 0 : std::max(option.get_type_size_max(), 0);  // a flag expects 0
  if (entry.values > 0) split_type_name(option.get_type_name(), entry);
  entry.repeats = option.get_items_expected_max() >= CLI::detail::expected_max_vector_size;
  entry.required = option.get_required();
  entry.default_value = option.get_default_str();
  entry.help = option.get_description();
  entry.choices = option_choices(option);
  for (const CLI::Option* other : option.get_excludes()) entry.excludes.push_back(other->get_name());
  for (const CLI::Option* other : option.get_needs()) entry.needs.push_back(other->get_name());
  return entry;
}

CommandEntry command_entry(CLI::App& app, std::vector<std::string> path) {
  CommandEntry entry;
  entry.path = std::move(path);
  entry.description = app.get_description();
  entry.notes = parse_footer(app.get_footer());
  std::vector<OptionEntry> positionals;
  for (CLI::Option* option : app.get_options()) {
    OptionEntry option_info = option_entry(*option);
    if (option_info.names.empty()) {
      positionals.push_back(std::move(option_info));
    } else {
      entry.options.push_back(std::move(option_info));
    }
  }
  entry.options.insert(entry.options.end(), positionals.begin(), positionals.end());
  for (CLI::App* sub : app.get_subcommands([](CLI::App* candidate) { return !candidate->get_group().empty(); })) {
    std::vector<std::string> sub_path = entry.path;
    sub_path.push_back(sub->get_name());
    entry.subcommands.push_back(command_entry(*sub, std::move(sub_path)));
  }
  return entry;
}

void collect(const CommandEntry& command, std::vector<const CommandEntry*>& out) {
  out.push_back(&command);
  for (const CommandEntry& sub : command.subcommands) collect(sub, out);
}

}  // namespace

std::string OptionEntry::long_name() const {
  for (const std::string& name : names) {
    if (name.rfind("--", 0) == 0) return name;
  }
  return names.empty() ? positional : names.front();
}

std::string CommandEntry::full_name(const std::string& program, char separator) const {
  std::string name = program;
  for (const std::string& word : path) name += separator + word;
  return name;
}

CommandEntry command_tree(CLI::App& app) { return command_entry(app, {}); }

std::vector<const CommandEntry*> all_commands(const CommandEntry& root) {
  std::vector<const CommandEntry*> out;
  collect(root, out);
  return out;
}

}  // namespace xref::manual
