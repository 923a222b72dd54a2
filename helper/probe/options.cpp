#include "probe/options.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "command/option_values.h"
#include "mark/follower.h"
#include "parse_error_render.h"
#include "probe_abi.h"

namespace xref {
namespace {

constexpr uint64_t kMaxRecordsBound = 10000000;

// No function name or address holds a control character (a newline pasted
// in with it): refused, the address quoted as fetch specs quote theirs, so
// that this error, and every later one that names the address, is one line.
Result<void> check_address_bytes(const std::string& address) {
  const auto control = std::find_if(address.begin(), address.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
  if (control == address.end()) return {};
  return make_error(ErrorCode::invalid_argument,
                    "probe " + quoted_text(address) + ": " + quoted_character(*control) + " (column " +
                        std::to_string(control - address.begin() + 1) + ") is in no function name or address",
                    "name a function as nm -C prints it, or an instruction's static VA (0x1234)");
}

}  // namespace

Result<void> validate_probe_request(const ProbeRequest& request) {
  for (const std::string& address : request.addresses) {
    if (auto clean = check_address_bytes(address); !clean) return clean.error();
  }
  if (request.backend != "auto" && request.backend != "uprobe_multi" && request.backend != "perf_uprobe" &&
      request.backend != "tracefs") {
    return make_error(ErrorCode::invalid_argument, "--backend must be auto, uprobe_multi, perf_uprobe or tracefs");
  }
  // The stop is a signal the BPF program sends from the hit itself; a
  // tracefs record is read long after its thread went on.
  if (request.backend == "tracefs" && !request.stop_when.empty()) {
    return make_error(ErrorCode::invalid_argument, "--stop-when needs a BPF backend, not tracefs",
                      "use --backend auto, uprobe_multi or perf_uprobe");
  }
  // The kernel walks the stack at the hit; a tracefs record has no stack.
  if (request.backend == "tracefs" && request.stacks != 0) {
    return make_error(ErrorCode::invalid_argument, "--stacks needs a BPF backend, not tracefs",
                      "use --backend auto, uprobe_multi or perf_uprobe");
  }
  if (request.every == 0) return make_error(ErrorCode::invalid_argument, "--every must be at least 1");
  if (auto ringbuf = check_ringbuf_bytes(request.ringbuf_bytes); !ringbuf) return ringbuf.error();
  if (!request.stop_when.empty() && !request.debugger.present) {
    return make_error(ErrorCode::invalid_argument,
                      "--stop-when stops a thread for a debugger, and there is none: its signal would end the process",
                      "run `xref probe ... --stop-when ...` inside gdb or lldb (the xref command there)");
  }
  if (request.stop_skip != 0 && request.stop_when.empty()) {
    return make_error(ErrorCode::invalid_argument, "--skip counts hits of --stop-when, which is not given",
                      "add --stop-when 'FILTER'");
  }
  return check_mark_options(request.mark_file, request.mark_regex);
}

void add_probe_options(CLI::App& command_app, ProbeCommandOptions& options_ref) {
  CLI::App* command = &command_app;
  ProbeCommandOptions* options = &options_ref;
  ProbeRequest& request = options->request;
  add_process_options(*command, *options);
  command->add_option("address", request.addresses,
                      "what to probe: a function (sym, module:sym), any instruction start (0xVA, module:0xVA), or in a "
                      "debugger bp:N (breakpoint N's locations)")
      ->required();
  command->add_option("--backend", request.backend,
                      "auto, uprobe_multi, perf_uprobe, or tracefs (uprobe_events, no BPF; counted in xref from "
                      "records; auto falls back to it where BPF cannot be used)")
      ->capture_default_str()
      ->check(one_of(kBackends));
  command->add_flag("--count", options->count, "count hits (always done; the seed's spelling)");
  command->add_flag("--callers", request.callers,
                    "the call sites hits came from: exact at a function's entry, inferred from .eh_frame inside it");
  command->add_flag("--regs", request.regs, "samples carry every general register");
  command->add_option("--fetch", request.fetch, "values read at every hit, e.g. 'amount=+0x30(%cx):u64'")
      ->check(not_empty("a fetch spec", "--fetch 'amount=+0x30(%cx):u64'"));
  command->add_option("--filter", request.filter, "only hits where this holds over the fetched values pass, e.g. "
                                                  "'amount > 0'");
  command->add_option("--every", request.every, "sample every Nth passing hit of an address")
      ->capture_default_str()
      ->transform(number_in({1, kMaxRecordsBound}));
  command->add_option("--first", request.first, "keep the first N samples of each address (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  command->add_option("--until-hits", request.until_hits, "stop after N passing hits in all (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX / 2}));
  command->add_option("--max-events", request.max_events, "samples kept in all (0: no limit)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxRecordsBound}));
  add_duration_option(*command, request.duration_ms, "stop after this long (0: until a bound or Ctrl-C)");
  command->add_option("--stop-when", request.stop_when,
                      "in gdb or lldb: stop the thread of the first hit where this holds over the fetched values, "
                      "e.g. 'amount > 1000' (evaluated in BPF; one stop)");
  command->add_option("--skip", request.stop_skip, "with --stop-when: let N such hits go by, stop at the next")
      ->capture_default_str()
      ->transform(number_in({0, UINT64_MAX / 2}));
  command->add_option("--group-by", request.group_by,
                      "count passing hits by ret (the function's return value at its rets), caller, tid, or a "
                      "fetched NAME")
      ->check(not_empty("a group key", "--group-by caller"));
  command->add_option("--max-addresses", request.max_addresses,
                      "the most functions one glob ('set*', 'libc.so.6:str*') may match (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{XREF_PROBE_MAX_SITES}));
  command->add_option("--hist", request.hist, "a log2 histogram of a fetched NAME")
      ->check(not_empty("a fetched name", "--fetch 'size=%si:u64' --hist size"));
  command->add_option("--stacks", request.stacks,
                      "count passing hits by whole user stack, up to N frames, walked by frame pointers (frames of "
                      "code built without them are skipped)")
      ->transform(number_in({1, XREF_PROBE_MAX_STACK_DEPTH}));
  command->add_flag("--jsonl", options->jsonl,
                    "JSON lines: each heartbeat as it comes, then the result document as one line");
  command->add_option("--heartbeat-ms", request.heartbeat_ms,
                      "print a progress line this often: hits so far per address, rate, lost (0: none)")
      ->capture_default_str()
      ->transform(number_in({0, kMaxDurationMs}));
  add_status_option(*command, options->no_status);
  command->add_option("--mark-file", request.mark_file,
                      "a log followed during the probe: samples and heartbeats are stamped with its latest line "
                      "matching --mark-regex")
      ->type_name("FILE");
  command->add_option("--mark-regex", request.mark_regex,
                      "with --mark-file: the lines to stamp with (its first group, if any, is the mark shown)");
  command->add_flag("--allow-breakpoint-collision", request.allow_breakpoint_collision,
                    "in a debugger: allow probes on enabled breakpoint locations (the probe swallows the breakpoint)");
  add_ringbuf_option(*command, request.ringbuf_bytes, "sample ring buffer size, a power of two (tracefs: per CPU)");
}

}  // namespace xref
