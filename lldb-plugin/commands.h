// The `xref` subcommands, one class each (one file each: trace_command.cpp,
// show_command.cpp, ...). DoExecute parses, sends a protocol request, and
// renders the reply with LLDB's symbols.
#pragma once

#include <string>

#include "command_support.h"

namespace xref::lldb_plugin {

class TraceCommand : public Subcommand {
 public:
  const char* name() const override { return "trace"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class ProbeCommand : public Subcommand {
 public:
  const char* name() const override { return "probe"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class ShowCommand : public Subcommand {
 public:
  const char* name() const override { return "show"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class SessionsCommand : public Subcommand {
 public:
  const char* name() const override { return "sessions"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class StopCommand : public Subcommand {
 public:
  const char* name() const override { return "stop"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class BreakCommand : public Subcommand {
 public:
  const char* name() const override { return "break"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

class HelperSubcommand : public Subcommand {
 public:
  const char* name() const override { return "helper"; }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;
};

// maps, resolve, doctor: the helper's one-shot commands, run with the
// process's pid and printed readably.
class OneShotCommand : public Subcommand {
 public:
  explicit OneShotCommand(std::string command) : command_(std::move(command)) {}
  const char* name() const override { return command_.c_str(); }
  const char* help() const override;
  const char* syntax() const override;
  bool execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) override;

 private:
  std::string command_;
};

}  // namespace xref::lldb_plugin
