#include "serve/profile_offline.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "command/usage_text.h"
#include "output/report.h"
#include "profile/commands.h"
#include "serve/captured_output.h"

namespace xref::serve {
namespace {

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// How many positional words `command` got: words that are not options nor
// an option's value.
size_t positionals(const CLI::App& command, const std::vector<std::string>& words) {
  size_t count = 0;
  for (size_t at = 0; at < words.size(); ++at) {
    const std::string& word = words[at];
    if (word == "--") return count + words.size() - at - 1;
    if (word.size() < 2 || word[0] != '-') {
      ++count;
      continue;
    }
    if (word.find('=') != std::string::npos) continue;
    const CLI::Option* option = command.get_option_no_throw(word);
    if (option && option->get_expected_min() > 0) ++at;  // its value
  }
  return count;
}

}  // namespace

bool is_profile_offline(const std::vector<std::string>& words) {
  return words.size() > 1 && words[0] == "profile" &&
         (words[1] == "report" || words[1] == "annotate" || words[1] == "diff");
}

std::variant<nlohmann::json, ProtocolError> run_profile_offline(const std::vector<std::string>& words,
                                                                const CaptureFiles& captures) {
  CLI::App app{"xref", "xref"};
  int exit_status = 0;
  CLI::App* profile = app.add_subcommand("profile");
  setup_profile_offline(*profile, exit_status);
  const std::string& name = words[1];
  CLI::App* command = profile->get_subcommand(name);
  std::vector<std::string> rest(words.begin() + 2, words.end());
  const bool asks_help = std::find_if(rest.begin(), rest.end(), [](const std::string& word) {
                           return word == "--help" || word == "-h";
                         }) != rest.end();
  if (asks_help) return nlohmann::json{{"help", command->help()}};
  // The captures the words leave out: this helper's last ones.
  const size_t given = positionals(*command, rest);
  const size_t wanted = name == "diff" ? 2 : 1;
  const size_t files_given = name == "annotate" ? (given >= 2 ? 1 : 0) : std::min(given, wanted);
  if (files_given < wanted) {
    const std::vector<std::string> latest = captures.latest(wanted - files_given);
    if (latest.size() < wanted - files_given) {
      const bool none = latest.empty();
      return cli_error(make_error(ErrorCode::invalid_argument,
                                  std::string(none ? "no capture of this helper yet" : "one capture of this helper yet") +
                                      " for `xref profile " + name + "` without " +
                                      (wanted - files_given == 1 ? "a file" : "files"),
                                  "`xref profile` first (its capture ends at the next stop), or name a .xprof file"));
    }
    // A diff of one named file: that file before, the last capture after.
    if (name == "diff" && files_given == 1) rest.push_back(latest.back());
    else rest.insert(rest.begin(), latest.begin(), latest.end());
  }
  std::vector<std::string> args = {"profile", name};
  args.insert(args.end(), rest.begin(), rest.end());
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  Captured out(std::cout);
  Captured errors(std::cerr);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& error) {
    return cli_error(usage_error(error, *command));
  } catch (const std::exception& failure) {
    return cli_error(make_error(ErrorCode::internal, "xref profile " + name + " failed: " + failure.what()));
  }
  std::vector<std::string> lines = text_lines(out.text());
  for (std::string& line : text_lines(errors.text())) lines.push_back(std::move(line));
  return nlohmann::json{{"text", lines}, {"exit_status", exit_status}};
}

}  // namespace xref::serve
