// What the man pages and the completion script say that the CLI11 app does
// not hold: each command's guide, the environment xref reads, its files,
// and which options take code (the debuggers' completion decides it too).
#include "cli/command_line.h"
#include "serve/frontend_commands.h"
#include "trace/saved/file.h"

namespace xref {

manual::ManualSite manual_site(const std::string& doc_dir) {
  manual::ManualSite site;
  site.version = XREF_VERSION;
  site.doc_dir = doc_dir;
  site.guides = {{"trace", "trace.md"},     {"probe", "probe.md"},   {"watch", "watch.md"},   {"profile", "profile.md"}, {"maps", "maps.md"},
                 {"resolve", "resolve.md"}, {"memscan", "memscan.md"}, {"doctor", "doctor.md"},
                 {"serve", "protocol.md"},  {"completion", "cli.md"}};
  site.environment = {
      {kMaxTraceBytesVariable,
       "the largest saved trace trace show, diff and export read, in bytes (decimal or 0x hex; default 1 GiB)"},
      {"XREF_DEBUG_BPF", "1: libbpf's messages on stderr"},
      {"SUDO_UID, SUDO_GID",
       "set by sudo: the files the user names are opened with that user's rights, and only processes that user "
       "could ptrace are opened"},
  };
  site.files = {
      {"/proc/PID/maps, /proc/PID/mem, /proc/PID/exe", "the target, read only: xref never writes its memory"},
      {"/sys/kernel/tracing", "tracefs: the tracefs backend's uprobe events, in a private instance"},
      {doc_dir + "/", "the guides: cli.md, trace.md, probe.md, json.md, lldb.md, gdb.md, protocol.md, ..."},
  };
  return site;
}

manual::CompletionSite completion_site() { return {serve::takes_code}; }

}  // namespace xref
