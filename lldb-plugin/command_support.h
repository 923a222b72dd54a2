// What every `xref` subcommand does around its own work: take the plugin
// state's lock, absorb the helper's events (and report its death), start
// the helper when needed, and print the collected lines at the end.
#pragma once

#include <lldb/API/LLDB.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "helper_client.h"
#include "plugin_state.h"

namespace xref::lldb_plugin {

inline constexpr auto kSessionTimeout = std::chrono::seconds(300);  // attaching/detaching many probes
inline constexpr auto kCommandTimeout = std::chrono::seconds(120);
inline constexpr auto kQuickTimeout = std::chrono::seconds(15);

std::vector<std::string> words_of(char** command);
bool has_word(const std::vector<std::string>& words, const std::string& word);
bool wants_help(const std::vector<std::string>& words);  // --help or -h

class CommandScope {
 public:
  CommandScope(lldb::SBDebugger debugger, lldb::SBCommandReturnObject& result);
  ~CommandScope();
  CommandScope(const CommandScope&) = delete;
  CommandScope& operator=(const CommandScope&) = delete;

  PluginState& state() { return *state_; }
  lldb::SBDebugger debugger() { return debugger_; }
  lldb::SBTarget target() { return debugger_.GetSelectedTarget(); }
  void print(std::string line) { lines_.push_back(std::move(line)); }
  Lines& lines() { return lines_; }

  // The helper, started if needed; null after reporting why it cannot start.
  HelperClient* helper();
  // Records an error for the user; returns false for DoExecute to return.
  bool fail(const std::string& message);
  bool fail(const HelperReply& reply);

 private:
  lldb::SBDebugger debugger_;
  lldb::SBCommandReturnObject& result_;
  std::shared_ptr<PluginState> state_;
  std::unique_lock<std::mutex> lock_;
  Lines lines_;
  std::string error_;
};

// Base of the subcommands: the help and syntax LLDB shows, and a DoExecute
// that never lets an exception into LLDB (it would end the debugger).
class Subcommand : public lldb::SBCommandPluginInterface {
 public:
  virtual const char* name() const = 0;
  virtual const char* help() const = 0;
  virtual const char* syntax() const = 0;
  bool DoExecute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) final;

 protected:
  virtual bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) = 0;
  // The plugin's own help (help text and syntax) into `scope`.
  bool print_help(CommandScope& scope) const {
    scope.print(std::string(help()) + "\n\nSyntax: " + syntax());
    return true;
  }
};

}  // namespace xref::lldb_plugin
