// What each command's --help shows below its options, and its man page
// holds: examples from its guide (docs/COMMAND.md), and trace diff's own
// exit statuses. Added by the CLI only: a debugger's `xref` takes other
// words (no --pid), so its help keeps to the options.
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "manual/help_notes.h"

namespace xref {
namespace {

using manual::HelpNotes;

struct CommandNotes {
  std::vector<std::string> path;
  HelpNotes notes;
};

const std::vector<CommandNotes>& all_notes() {
  static const std::vector<CommandNotes> notes = {
      {{},
       {{"Each command has its own page (man xref-trace, man xref-probe, ...) and guide. Tracing needs root "
         "(or CAP_BPF and CAP_PERFMON); under sudo, xref opens only what the user who ran sudo could."},
        {{"xref doctor", "what this host supports: BPF, uprobes, tracefs, perf"},
         {"xref trace --pid 3158 --start handle_request --functions validate,price_order --max-windows 1",
          "one window: the calls of validate and price_order on the thread that called handle_request, in order"}},
        {}}},
      {{"trace"},
       {{},
        {{"xref trace --pid 3158 --start handle_request --functions validate,price_order --max-windows 1 --addresses",
          "one window of handle_request, with each call's static VAs"},
         {"xref trace --pid 8020 --start handle_request --heartbeat-ms 300 --jsonl",
          "every window as one JSON line as it closes, and a progress line every 300 ms"}},
        {}}},
      {{"trace", "show"},
       {{},
        {{"xref trace show window.json --tree",
          "a saved trace's windows against the static callee tree of their start function"}},
        {}}},
      {{"trace", "diff"},
       {{},
        {{"xref trace diff even.json odd.json", "the first window of each trace aligned, and what differs"}},
        {{0, "the windows are equal"},
         {1, "they differ"},
         {2, "any error (with --json, error.code says which)"},
         {9, "xref was run set-user-ID or set-group-ID"}}}},
      {{"trace", "export"},
       {{},
        {{"xref trace export capture.json -o capture.chrome.json",
          "a saved trace as a timeline for chrome://tracing or Perfetto"}},
        {}}},
      {{"profile", "report"},
       {{},
        {{"xref profile report capture.xprof --by function --top 20",
          "the 20 functions with the most samples: self and total, with their module"},
         {"xref profile report capture.xprof --by caller --within parse_request",
          "the call paths through parse_request, shares of the samples that pass through it"},
         {"xref profile report capture.xprof --format svg -o flame.svg", "a flame graph to open in a browser"}},
        {}}},
      {{"profile", "annotate"},
       {{},
        {{"xref profile annotate capture.xprof busy_loop --percent function",
          "busy_loop's instructions with each one's share of its samples and its source line"}},
        {}}},
      {{"profile", "diff"},
       {{},
        {{"xref profile diff before.xprof after.xprof --min-delta 0.5%",
          "the functions whose share changed by half a point or more, largest change first"},
         {"xref profile diff before.xprof after.xprof --other ./app-new",
          "two builds compared, functions matched by name"}},
        {}}},
      {{"probe"},
       {{},
        {{"xref probe --pid 3158 validate apply_fee --callers",
          "one second of hits of validate and apply_fee, with the call sites they came from"},
         {"xref probe --pid 3158 apply_fee --fetch 'price=%di:u64' --filter 'price > 1000' --hist price",
          "the hits whose first argument is over 1000, with a histogram of it"}},
        {}}},
      {{"watch"},
       {{"Debug registers where they fire, else uprobes on the store instructions that can reach the ranges "
         "(--backend stores); writes no probe sees (the kernel) are reported as unobserved changes."},
        {{"xref watch --pid 4242 g_total g_config", "every write to two globals: thread, old -> new, writer"},
         {"xref watch --pid 4242 --follow 'moving_slot->+16:8' --duration 5s",
          "the length field of a buffer that moves, re-armed at each move"}},
        {}}},
      {{"profile"},
       {{"Samples every thread of the process (threads it starts later too) and writes a .xprof capture; "
         "`xref profile report FILE` reads it. The default event is cycles where the host has a hardware PMU, "
         "else cpu-clock; --callers dwarf unwinds in BPF from the modules' CFI, without frame pointers."},
        {{"xref profile --pid 4242 --duration 10s --out app.xprof",
          "ten seconds of process 4242's CPU at 99 samples per second per thread, with whole stacks"},
         {"xref profile --pid 4242 --callers fp --freq 999 --duration 2s",
          "frame-pointer stacks at 999 Hz into xref.xprof"}},
        {}}},
      {{"maps"},
       {{"The mappings as /proc/PID/maps reports them, and the file-backed ones grouped into modules (one per file, "
         "by device and inode), each with its load bias: live VA minus static VA."},
        {{"xref maps --pid 4242 --json", "process 4242's mappings and modules as one JSON document"}},
        {}}},
      {{"resolve"},
       {{"At most 256 addresses a call. Static VAs are as nm and objdump show them; an address inside an "
         "instruction is flagged MID-INSTRUCTION, as no probe may go there."},
        {{"xref resolve --pid 10601 0x55f1cb316c40 0x1000",
          "each live address's mapping, file offset, static VA, function and instruction"}},
        {}}},
      {{"memscan"},
       {{"Reads /proc/PID/mem read-only: the target is never written, stopped or signalled. Each context word is "
         "classified (a pointer into a module or the heap, a small integer, ...)."},
        {{"xref memscan --pid 23861 0x5eed5eedc0ffee11 --before-words 1 --after-words 3",
          "where process 23861 holds that word, with a word before and three after each hit"}},
        {}}},
      {{"doctor"},
       {{"Each facility is tried, not guessed from version numbers; run it as the user who will run xref (normally "
         "root). As root, it mounts tracefs when it is missing."},
        {{"xref doctor --json", "the checks as one JSON document"}},
        {}}},
      {{"serve"},
       {{"A debugger front end starts it and speaks JSON lines on its stdin and stdout; a person rarely does."},
        {{"sudo -n xref serve", "the helper of a debugger that does not run as root"}},
        {}}},
      {{"completion"},
       {{},
        {{"source <(xref completion bash)", "Tab completion for xref in this shell"}},
        {}}},
  };
  return notes;
}

CLI::App* find_command(CLI::App& app, const std::vector<std::string>& path) {
  CLI::App* command = &app;
  for (const std::string& word : path) {
    const std::vector<CLI::App*> named =
        command->get_subcommands([&word](CLI::App* sub) { return sub->get_name() == word; });
    if (named.empty()) return nullptr;
    command = named.front();
  }
  return command;
}

}  // namespace

void add_command_notes(CLI::App& app) {
  for (const CommandNotes& entry : all_notes()) {
    // A note for a command that is gone is a bug the manual tests catch.
    if (CLI::App* command = find_command(app, entry.path)) command->footer(manual::footer_text(entry.notes));
  }
}

}  // namespace xref
