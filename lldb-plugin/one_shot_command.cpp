// xref maps | resolve | doctor WORDS...: the helper's one-shot commands with
// the process's pid filled in, printed readably.
#include "commands.h"
#include "debugger_context.h"
#include "document_render.h"

namespace xref::lldb_plugin {

const char* OneShotCommand::help() const {
  if (command_ == "maps") return "Mappings and modules of the process, with the load bias of each (xref maps).";
  if (command_ == "resolve") {
    return "Live addresses of the process -> mapping, file offset, static VA, function, instruction boundary "
           "(xref resolve).";
  }
  return "What this host supports for xref, found by trying: BPF, uprobe_multi, perf uprobes, tracefs, ... "
         "(xref doctor, run by the helper with its privileges).";
}

const char* OneShotCommand::syntax() const {
  if (command_ == "maps") return "xref maps [--pid P]          (`xref maps --help` for every option)";
  if (command_ == "resolve") return "xref resolve LIVE_VA... [--pid P]          (`xref resolve --help` for every option)";
  return "xref doctor";
}

bool OneShotCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  nlohmann::json context = nlohmann::json::object();
  if (command_ != "doctor") {
    if (auto pid = process_id(scope.target())) {
      context["pid"] = *pid;
    } else if (!wants_help(words) && !has_word(words, "--pid")) {
      return scope.fail("xref: no live process: `run` or `attach` first (or give --pid)");
    }
  }
  HelperClient* helper = scope.helper();
  if (helper == nullptr) return false;
  nlohmann::json argv = nlohmann::json::array({command_});
  for (const auto& word : words) argv.push_back(word);
  const HelperReply reply = helper->request("command", {{"argv", argv}, {"context", context}}, kCommandTimeout);
  if (!reply.ok) return scope.fail(reply);
  if (reply.result.contains("help")) {
    scope.print(reply.result.value("help", std::string()));
    return true;
  }
  const nlohmann::json document = reply.result.value("document", nlohmann::json::object());
  for (auto& line : render_document(document)) scope.print(std::move(line));
  const std::string error = document_error(document);
  if (!error.empty()) return scope.fail("xref: " + error);
  return true;
}

}  // namespace xref::lldb_plugin
