#include "completion_shim.h"

#include <filesystem>

namespace xref::lldb_plugin {

Failure completion_table(Frontend& frontend, const std::map<std::string, std::string>& helps, std::string& json) {
  nlohmann::json commands = nlohmann::json::array();
  Failure failure;
  Failure started = frontend.with_helper([&](HelperClient& helper) {
    const HelperReply names = helper.request("complete", {{"argv", nlohmann::json::array()}, {"partial", ""}},
                                             kQuickTimeout);
    if (!names.ok) {
      failure = "xref: " + names.message;
      return;
    }
    for (const auto& name : names.result.value("candidates", nlohmann::json::array())) {
      if (!name.is_string()) continue;
      const HelperReply options = helper.request("complete", {{"argv", {name}}, {"partial", "-"}}, kQuickTimeout);
      if (!options.ok) continue;  // a command the helper names but does not describe: the plugin's own stays
      const auto help = helps.find(name.get<std::string>());
      commands.push_back({{"name", name},
                          {"help", help != helps.end() ? help->second : ""},
                          {"options", options.result.value("options", nlohmann::json::array())},
                          {"positional_code", options.result.value("positional_code", false)}});
    }
  });
  if (started) return started;
  if (failure) return failure;
  json = nlohmann::json{{"commands", commands}}.dump();
  return std::nullopt;
}

std::optional<std::vector<std::string>> shim_words(char** command) {
  if (command == nullptr || command[0] == nullptr || command[1] != nullptr) return std::nullopt;
  const std::string hex = command[0];
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string text;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const std::string pair = hex.substr(i, 2);
    if (pair.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return std::nullopt;
    text += static_cast<char>(std::stoi(pair, nullptr, 16));
  }
  const nlohmann::json words = nlohmann::json::parse(text, nullptr, false);
  if (!words.is_array() || words.empty()) return std::nullopt;
  std::vector<std::string> result;
  for (const auto& word : words) {
    if (!word.is_string()) return std::nullopt;
    result.push_back(word);
  }
  return result;
}

std::set<std::string> import_completion_shim(lldb::SBDebugger debugger, const std::string& plugin_path) {
  std::set<std::string> names;
  if (plugin_path.empty()) return names;
  const std::string shim = (std::filesystem::path(plugin_path).parent_path() / "xref_complete.py").string();
  std::error_code ignored;
  if (!std::filesystem::is_regular_file(shim, ignored)) return names;
  lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
  lldb::SBCommandReturnObject python;
  // An LLDB built without Python says so here, and keeps the plugin's commands.
  interpreter.HandleCommand("script -l python -- pass", python);
  if (!python.Succeeded()) return names;
  lldb::SBCommandReturnObject imported;
  std::string quoted;
  for (char c : shim) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  interpreter.HandleCommand(("command script import \"" + quoted + "\"").c_str(), imported);
  if (!imported.Succeeded()) return names;
  // What `xref ` completes to now: the shim's subcommands and the plugin's so far.
  lldb::SBStringList matches;
  interpreter.HandleCompletion("xref ", 5, 0, -1, matches);
  for (uint32_t i = 1; i < matches.GetSize(); ++i) {  // 0: the common prefix
    std::string name = matches.GetStringAtIndex(i);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    names.insert(name);
  }
  return names;
}

}  // namespace xref::lldb_plugin
