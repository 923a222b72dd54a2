#include "watch/options.h"

#include "command/option_values.h"
#include "mark/follower.h"
#include "watch/hw_rules.h"

namespace xref {
namespace {

constexpr uint64_t kMaxRecordsBound = 10000000;

}  // namespace

Result<void> validate_watch_request(const WatchRequest& request) {
  if (request.every == 0) return make_error(ErrorCode::invalid_argument, "--every must be at least 1");
  if (!request.stop_when.empty() && !request.debugger.present) {
    return make_error(ErrorCode::invalid_argument, "--stop-when stops a thread for a debugger, and there is none",
                      "run `xref watch ... --stop-when ...` inside gdb or lldb");
  }
  if (request.stop_skip != 0 && request.stop_when.empty()) {
    return make_error(ErrorCode::invalid_argument, "--stop-skip counts writes of --stop-when, which is not given",
                      "add --stop-when 'value == 0'");
  }
  // Expressions are a debugger's: the CLI takes addresses and symbols.
  if ((request.size != 0 || request.location) && !request.debugger.present) {
    return make_error(ErrorCode::invalid_argument,
                      std::string(request.location ? "-l/--location" : "-s/--size") +
                          " sizes and places a debugger's expressions, and there is none",
                      "give ADDR:LEN or --len N here; in gdb or lldb, `xref watch -l EXPR -s N`");
  }
  // Neither engine watches reads alone: x86 has no read-only breakpoint.
  if (request.access == "read") return hw_breakpoint_type(request.access).error();
  if (request.access != "write" && request.backend == "stores") {
    return make_error(ErrorCode::invalid_argument, "--access rw needs debug registers: the stores engine sees writes only",
                      "use --access write, or --backend hw where debug registers fire");
  }
  return check_mark_options(request.mark_file, request.mark_regex);
}

void add_watch_options(CLI::App& command, WatchCommandOptions& options) {
  WatchRequest& request = options.request;
  add_process_options(command, options);
  command.add_option("address", request.addresses,
                     "what to watch: a data symbol (g_total, libfoo.so:g_x, g_config+0x10) or a live address "
                     "(0x7f..), each with an optional :LEN in bytes");
  command.add_option("--follow", request.follows,
                     "watch a pointer slot and LEN bytes at OFF past where it points, re-armed whenever the slot "
                     "changes: 'SLOT->+OFF:LEN', e.g. 'moving_slot->+8:8'")
      ->type_name("SPEC")
      ->allow_extra_args(false);  // one SPEC per --follow: an ADDR after it stays an ADDR
  command.add_option("-s,--size", request.size,
                     "in gdb or lldb: the bytes to watch at each expression (default: its type's size; with -l, the "
                     "pointee's, else 8)")
      ->transform(number_in({1, 1u << 20}));
  command.add_flag("-l,--location", request.location,
                   "in gdb or lldb: each expression's value is the address to watch (as lldb's `watchpoint set "
                   "expression`), not the object it names");
  command.add_option("--stop-when", request.stop_when,
                     "in gdb or lldb: stop the writing thread at the first write where this holds over value (the "
                     "new bytes) and old, e.g. 'value == 0' (evaluated in BPF; one stop)")
      ->type_name("FILTER");
  command.add_option("--stop-skip,--skip", request.stop_skip, "with --stop-when: let N such writes go by, stop at the next")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX / 2}));
  command.add_option("--len", request.length,
                     "the length of an ADDR without :LEN (default: its symbol's size, else 8)")
      ->transform(number_in({1, 1u << 20}));
  command.add_option("--access", request.access,
                     "write, or rw (reads too: debug registers only); read alone is refused (x86 has none)")
      ->capture_default_str()
      ->check(one_of({"write", "rw", "read"}));
  command.add_option("--backend", request.backend,
                     "auto (debug registers where they fire and the ranges fit them, else stores), hw, or stores "
                     "(uprobes on the store instructions that can reach the ranges)")
      ->capture_default_str()
      ->check(one_of({"auto", "hw", "stores"}));
  command.add_option("--in", request.in,
                     "stores: where to look for writers: a module (libfoo.so) or a function (fill_buffer, "
                     "libfoo.so:fn); default: the executable's code, plus libc's memcpy/memset/... by contract")
      ->type_name("MODULE|FN")
      ->allow_extra_args(false);  // one per --in: an ADDR after it stays an ADDR
  command.add_flag("--changed", request.changed, "record only writes that change the bytes (counted either way)");
  command.add_option("--fetch", request.fetch,
                     "values read at each write, as probe's: 'n=%rdi:u64,p=+8(%rsi):s32' (stores: at the store, "
                     "before it runs; hw: after the trap)")
      ->type_name("SPEC");
  command.add_option("--filter", request.filter,
                     "record only writes where this holds, over value (the range's new bytes as an integer of its "
                     "1/2/4/8 bytes), old and the --fetch names: 'value > old', 'value == 0 && n > 3' (counted "
                     "either way)")
      ->type_name("EXPR");
  command.add_option("--every", request.every, "record every Nth passing write of a range")
      ->capture_default_str()
      ->transform(number_in({1, kMaxRecordsBound}));
  command.add_option("--first", request.first, "record the first N passing writes of each range (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  command.add_option("--until-hits", request.until_hits, "stop after N passing writes in all (0: no bound)")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX / 2}));
  command.add_flag("--regs", request.regs,
                   "records carry the general registers (stores: at the store, before it runs; hw: after the trap)");
  command.add_flag("--callers", request.callers,
                   "the user stack of each write (frame pointers; frame 1 from .eh_frame), counted per writer site");
  add_duration_option(command, request.duration_ms, "stop after this long (0: until a bound or Ctrl-C)");
  command.add_option("--max-events", request.max_events, "writes recorded in all (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  command.add_flag("--jsonl", options.jsonl, "JSON lines: each record as it comes, then the result document as one line");
  command.add_option("--mark-file", request.mark_file,
                     "a log followed during the watch: each write is stamped with its latest line matching --mark-regex")
      ->type_name("FILE");
  command.add_option("--mark-regex", request.mark_regex, "with --mark-file: the lines to stamp with");
}

}  // namespace xref
