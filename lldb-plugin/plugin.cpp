// The LLDB front end of xref: `plugin load .../libxref_lldb.so` adds the
// `xref` command (docs/lldb.md). Public SB API only.
//
// A thin multiword command (LLDB completes and lists its subcommands): every
// subcommand sends the user's words as they are typed to the helper (`run`),
// which parses them with the CLI's own definitions and answers with the text
// to print. Once a helper runs, the commands it names (`complete`) that are
// not subcommands yet are added, so a new helper command needs no change
// here. Only `xref helper` (which helper to start) and the stop hook's `xref
// show --new` are the plugin's own. With Python in LLDB, the commands that
// have options are the completion shim's instead (completion_shim.h), which
// hands what LLDB parsed back here (`xref _run`).
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <lldb/API/LLDB.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "breakpoint_guard.h"
#include "completion_shim.h"
#include "frontend.h"
#include "helper_process.h"
#include "stop_signal.h"

namespace lldb {
__attribute__((visibility("default"))) bool PluginInitialize(lldb::SBDebugger debugger);
}

namespace xref::lldb_plugin {
namespace {

constexpr const char* kHelp =
    "Live tracing with xref: what the process does next, in order, from eBPF uprobes, without stopping it "
    "(docs/lldb.md).\n"
    "\n"
    "  xref trace --here            a window on this thread until the selected frame returns; prints at the next stop\n"
    "  xref trace --start bp:N      a window at each hit of breakpoint N's locations (N is off meanwhile)\n"
    "  xref probe ADDRESS...        exact hit counts, callers and values; what changed prints at each stop\n"
    "  xref watch EXPR...           every write to a variable, struct or buffer: thread, old -> new, writer\n"
    "  xref profile [--duration 5s] where the process spends its CPU until the next stop; the hottest functions then\n"
    "  xref profile report|annotate|diff   the CLI's reports over the last capture (or a .xprof file)\n"
    "  xref show [--all] [--json]   what is new (every stop prints it by itself)\n"
    "  xref sessions                the sessions started from this debugger\n"
    "  xref stop [N | --all]        stop sessions; their breakpoints come back\n"
    "  xref break W:SEQ             a breakpoint where event SEQ of window W happened\n"
    "  xref maps | resolve | memscan | doctor    the helper's one-shot commands on this process\n"
    "  xref helper [COMMAND...]     show or set the command that starts the helper (`xref helper --help`)\n"
    "\n"
    "`xref help` lists every command; `xref COMMAND --help` its options (the helper's own help).";

constexpr const char* kHelperHelp =
    "xref helper                      show the command that starts the helper and whether it runs\n"
    "xref helper COMMAND [ARG...]     start the helper with this command from now on,\n"
    "                                 e.g. xref helper sudo -n /usr/local/bin/xref serve\n"
    "xref helper --default            back to the default (the xref next to this plugin, then ../helper/xref,\n"
    "                                 then PATH, with `serve`; or the XREF_HELPER environment variable)";

// What `help xref` says of each subcommand; every one takes `--help`.
constexpr std::pair<const char*, const char*> kCommands[] = {
    {"trace", "trace what happens next, in order, without stopping the process (--here, --start bp:N, ...)"},
    {"probe", "count what reaches addresses: exact hits, callers, values; --stop-when stops a thread"},
    {"watch", "record every write to expressions' bytes without stopping: writer, thread, old -> new (-s, -l, "
              "--follow, --stop-when)"},
    {"profile", "sample where the process spends its CPU while it runs, until the next stop (--duration, "
                "--until-stop, --callers, --freq, --out); report, annotate, diff over the last capture"},
    {"show", "print what is new: windows, probe changes, session ends (--all, --json, --session N)"},
    {"sessions", "list the sessions started from this debugger"},
    {"stop", "stop sessions (N or --all): their probes go, their breakpoints come back"},
    {"break", "set a breakpoint where event SEQ of window W happened (W:SEQ)"},
    {"maps", "mappings and modules of the process, with the load bias of each"},
    {"resolve", "live addresses of the process -> module, static VA, function"},
    {"memscan", "search the process's memory"},
    {"doctor", "what this host supports for xref, found by trying"},
    {"help", "every command of the helper"},
    {"helper", "show or set the command that starts the helper"},
};

// The completion shim's way in (completion_shim.h): the words it parsed, and
// the helper's commands and options it declares to LLDB.
constexpr const char* kShimRun = "_run";
constexpr const char* kShimTable = "_complete";

// Per debugger: the `xref` multiword and its subcommands' names.
struct Multiword {
  lldb::SBCommand xref;
  std::set<std::string> names;
  bool asked = false;  // the helper's commands were added
};

std::map<lldb::user_id_t, Multiword>& multiwords() {
  static auto* all = new std::map<lldb::user_id_t, Multiword>();
  return *all;
}

class XrefCommand : public lldb::SBCommandPluginInterface {
 public:
  explicit XrefCommand(std::string name) : name_(std::move(name)) {}

  bool DoExecute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override {
    try {
      return execute(debugger, command, result);
    } catch (const std::exception& error) {  // an exception into LLDB would end the debugger
      result.SetError((std::string("xref: internal error: ") + error.what()).c_str());
    }
    return false;
  }

 private:
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
    std::vector<std::string> words{name_};
    for (char** word = command; word != nullptr && *word != nullptr; ++word) words.emplace_back(*word);
    if (name_ == kShimRun) {  // a command the completion shim parsed (completion_shim.h)
      auto parsed = shim_words(command);
      if (!parsed) {
        result.SetError("xref: _run takes one hex-encoded JSON array of words (xref_complete.py's)");
        return false;
      }
      words = std::move(*parsed);
    } else if (name_ == kShimTable) {
      return print_completion_table(debugger, result);
    }
    const bool stop_hook = words == std::vector<std::string>{"show", "--new"};
    // A stop by the program's own --stop-when signal goes on (stop_signal.h).
    if (stop_hook && pass_program_signal(debugger, result)) return true;
    auto frontend = Frontend::of(debugger);
    Lines lines;
    Failure failure;
    {
      auto held = frontend->lock();
      if (stop_hook) {
        frontend->stop_hook_ran(debugger.GetSelectedTarget().GetProcess());
        frontend->at_stop(lines);
      } else if (!words.empty() && words[0] == "helper") {
        words.erase(words.begin());
        if (words == std::vector<std::string>{"--help"} || words == std::vector<std::string>{"-h"}) {
          lines.push_back(kHelperHelp);
        } else {
          frontend->helper_command(words, lines, failure);
        }
      } else {
        failure = frontend->run(words, nlohmann::json::object(), lines);
      }
    }
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    if (!text.empty()) result.PutCString(text.c_str(), static_cast<int>(text.size()));
    if (failure) {
      result.SetError(failure->rfind("xref: ", 0) == 0 ? failure->c_str() : ("xref: " + *failure).c_str());
      return false;
    }
    result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
    add_new_commands(debugger, *frontend);
    return true;
  }

  static bool print_completion_table(lldb::SBDebugger debugger, lldb::SBCommandReturnObject& result) {
    auto frontend = Frontend::of(debugger);
    std::map<std::string, std::string> helps;
    for (const auto& [name, help] : kCommands) helps[name] = help;
    std::string json;
    Failure failure;
    {
      auto held = frontend->lock();
      failure = completion_table(*frontend, helps, json);
    }
    if (failure) {
      result.SetError(failure->c_str());
      return false;
    }
    result.AppendMessage(json.c_str());
    result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
    return true;
  }

  // The helper's commands that are no subcommand yet (a newer helper's).
  static void add_new_commands(lldb::SBDebugger debugger, Frontend& frontend) {
    auto found = multiwords().find(debugger.GetID());
    HelperClient* helper = frontend.running_helper();
    if (helper == nullptr || found == multiwords().end() || found->second.asked) return;
    found->second.asked = true;
    const HelperReply reply = helper->request("complete", {{"argv", nlohmann::json::array()}, {"partial", ""}}, kQuickTimeout);
    for (const auto& name : reply.ok ? reply.result.value("candidates", nlohmann::json::array()) : nlohmann::json()) {
      if (!name.is_string() || name.get<std::string>().rfind("-", 0) == 0) continue;
      const std::string text = name;
      if (found->second.names.insert(text).second) {
        found->second.xref.AddCommand(text.c_str(), new XrefCommand(text),
                                      ("the helper's `" + text + "` (`xref " + text + " --help`)").c_str());
      }
    }
  }

  std::string name_;
};

void on_debugger_destroyed(lldb::user_id_t debugger_id, void*) { Frontend::forget(debugger_id); }

}  // namespace
}  // namespace xref::lldb_plugin

// Exported: how a second copy of the plugin knows the first.
extern "C" __attribute__((visibility("default"))) const char xref_lldb_plugin_marker = 1;

namespace xref::lldb_plugin {
namespace {

// The path of another copy of this plugin already loaded here, or "": a
// loaded library with the marker, other than this one (LLDB may load plugins
// RTLD_LOCAL, so each library is asked by its own handle). Copies are told
// apart by their load address: `&xref_lldb_plugin_marker` here may be the
// first copy's, by symbol interposition.
std::string first_loaded_copy() {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&first_loaded_copy), &self) == 0) return {};
  std::vector<std::string> libraries;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* names) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(names)->push_back(info->dlpi_name);
        }
        return 0;
      },
      &libraries);
  for (const std::string& library : libraries) {
    void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    const void* marker = dlsym(handle, "xref_lldb_plugin_marker");
    dlclose(handle);
    Dl_info owner;
    if (marker == nullptr || dladdr(marker, &owner) == 0 || owner.dli_fbase == self.dli_fbase) continue;
    char resolved[PATH_MAX];
    return realpath(owner.dli_fname, resolved) != nullptr ? resolved : owner.dli_fname;
  }
  return {};
}

}  // namespace
}  // namespace xref::lldb_plugin

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
  using namespace xref::lldb_plugin;
  // Installed, the plugin is in LLDB's system plugin directory and loaded at
  // start; a second copy (`plugin load` of a build tree's) would run every
  // stop and breakpoint hook twice. The first one stays.
  if (std::string first = first_loaded_copy(); !first.empty()) {
    std::fprintf(stderr, "xref: the xref plugin %s is loaded in this LLDB already (an installed xref loads at "
                         "start); %s is not loaded\n", first.c_str(), plugin_library_path().c_str());
    return false;
  }
  lldb::SBCommand xref = debugger.GetCommandInterpreter().AddMultiwordCommand("xref", kHelp);
  if (!xref.IsValid()) return false;
  Multiword& added = multiwords()[debugger.GetID()];
  added.xref = xref;
  xref.AddCommand(kShimRun, new XrefCommand(kShimRun), "(for xref_complete.py, Tab completion) runs WORDS given as hex JSON");
  xref.AddCommand(kShimTable, new XrefCommand(kShimTable), "(for xref_complete.py, Tab completion) the helper's options");
  added.names = {kShimRun, kShimTable};
  for (const std::string& name : import_completion_shim(debugger, plugin_library_path())) added.names.insert(name);
  for (const auto& [name, help] : kCommands) {
    if (!added.names.insert(name).second) continue;  // the shim's
    xref.AddCommand(name, new XrefCommand(name), help, (std::string("xref ") + name + " [WORDS...]   (`xref " + name +
                                                         " --help`: every option)").c_str());
  }
  install_breakpoint_guard(debugger);
  debugger.AddDestroyCallback(on_debugger_destroyed, nullptr);
  return true;
}
