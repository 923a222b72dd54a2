#include "command_support.h"

namespace xref::lldb_plugin {

std::vector<std::string> words_of(char** command) {
  std::vector<std::string> words;
  for (char** word = command; word != nullptr && *word != nullptr; ++word) words.emplace_back(*word);
  return words;
}

bool has_word(const std::vector<std::string>& words, const std::string& word) {
  for (const auto& candidate : words) {
    if (candidate == word) return true;
  }
  return false;
}

bool wants_help(const std::vector<std::string>& words) { return has_word(words, "--help") || has_word(words, "-h"); }

CommandScope::CommandScope(lldb::SBDebugger debugger, lldb::SBCommandReturnObject& result)
    : debugger_(debugger), result_(result), state_(PluginState::of(debugger)), lock_(state_->lock()) {
  state_->absorb(lines_);
}

CommandScope::~CommandScope() {
  // The windows of a session whose process is gone get no stop to print
  // at: whatever xref command comes next shows them (unless the process
  // watcher did).
  state_->absorb(lines_);
  for (auto& [id, session] : state_->sessions()) {
    if (state_->process_gone(session)) show_session_windows(*state_, session, false, lines_);
  }
  std::string text;
  for (const auto& line : lines_) text += line + "\n";
  if (!text.empty()) result_.PutCString(text.c_str(), static_cast<int>(text.size()));
  if (!error_.empty()) {
    result_.SetError(error_.c_str());
  } else {
    result_.SetStatus(lldb::eReturnStatusSuccessFinishResult);
  }
}

HelperClient* CommandScope::helper() {
  std::string error;
  HelperClient* client = state_->helper(error);
  if (client == nullptr) {
    fail(error);
    return nullptr;
  }
  state_->absorb(lines_);  // what an earlier helper left to say
  return client;
}

bool Subcommand::DoExecute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  try {
    return execute(debugger, command, result);
  } catch (const std::exception& error) {
    result.SetError((std::string("xref: internal error in `xref ") + name() + "`: " + error.what()).c_str());
  } catch (...) {
    result.SetError((std::string("xref: internal error in `xref ") + name() + "`").c_str());
  }
  return false;
}

bool CommandScope::fail(const std::string& message) {
  error_ = message;
  return false;
}

bool CommandScope::fail(const HelperReply& reply) {
  std::string message = "xref: " + reply.message;
  if (reply.error.is_object() && reply.error.contains("column") && reply.error["column"].is_number_integer() &&
      reply.error["column"].get<int>() > 0) {
    message += " (column " + std::to_string(reply.error["column"].get<int>()) + ")";
  }
  if (!reply.hint.empty()) message += "; " + reply.hint;
  return fail(message);
}

}  // namespace xref::lldb_plugin
