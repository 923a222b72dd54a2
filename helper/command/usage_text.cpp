#include "command/usage_text.h"

#include <algorithm>
#include <vector>

#include "command/option_values.h"

namespace xref {
namespace {

std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// The command the words reached: the deepest subcommand parsed, and its
// spelling ("xref trace show").
const CLI::App& reached(const CLI::App& app, std::string& spelling) {
  const CLI::App* command = &app;
  spelling = app.get_name().empty() ? "xref" : app.get_name();
  for (;;) {
    const std::vector<CLI::App*> parsed = command->get_subcommands();
    if (parsed.empty()) return *command;
    command = parsed.back();
    spelling += " " + command->get_name();
  }
}

// The words CLI11 could not place, in the order they were typed, from the
// command reached up to the parser (an unknown option falls through to it).
std::vector<std::string> unplaced(const CLI::App& app, const CLI::App& command) {
  std::vector<std::string> words;
  for (const CLI::App* at = &command; at != nullptr; at = at == &app ? nullptr : at->get_parent()) {
    const std::vector<std::string> left = at->remaining(false);
    words.insert(words.end(), left.begin(), left.end());
  }
  return words;
}

}  // namespace

std::optional<std::string> nearest_option(const CLI::App& command, const std::string& typed) {
  const std::string word = typed.substr(0, typed.find('='));
  std::optional<std::string> nearest;
  size_t best = 0;
  for (const std::string& name : option_names(command)) {
    const size_t distance = edit_distance(word, name);
    const size_t allowed = std::max<size_t>(1, name.size() / 4);
    if (distance <= allowed && (!nearest || distance < best)) {
      nearest = name;
      best = distance;
    }
  }
  if (nearest) return nearest;
  // A name cut short: --heartbeat for --heartbeat-ms.
  if (word.size() < 4) return std::nullopt;
  for (const std::string& name : option_names(command)) {
    if (name.size() > word.size() && name.compare(0, word.size(), word) == 0 && (!nearest || name.size() < nearest->size())) {
      nearest = name;
    }
  }
  return nearest;
}

Error usage_error(const CLI::ParseError& failure, const CLI::App& app) {
  std::string spelling;
  const CLI::App& command = reached(app, spelling);
  const std::string help = "see `" + spelling + " --help`";
  if (dynamic_cast<const CLI::ExtrasError*>(&failure) == nullptr) return usage_error(failure, help);
  // CLI11's "The following arguments were not expected: 5 --duration" lists
  // the words backwards and says nothing of what was meant.
  const std::vector<std::string> words = unplaced(app, command);
  const auto option = std::find_if(words.begin(), words.end(),
                                    [](const std::string& word) { return word.size() > 1 && word[0] == '-'; });
  if (option != words.end()) {
    const std::string typed = option->substr(0, option->find('='));
    const std::optional<std::string> meant = nearest_option(command, typed);
    return make_error(ErrorCode::invalid_argument, "`" + spelling + "` has no option " + typed,
                      meant ? "did you mean " + *meant + "? " + help : help);
  }
  if (words.empty()) return usage_error(failure, help);
  return make_error(ErrorCode::invalid_argument, "`" + spelling + "` takes no argument '" + words.front() + "' here",
                    help);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace xref
