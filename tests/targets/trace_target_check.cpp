// Checks trace_target against its contract: runs it in one mode, then
// compares its startup lines and its --record ground truth with an
// independent model of what every request must execute (function order,
// arguments, return values, unwound frames, the tail call), or checks with
// objdump that the code really has the calls, the tail jump and the rets the
// trace tests rely on. What it shares with rust_target_check is in
// check_support.h.
//
//   trace_target_check MODE TARGET WORK_DIR
//
// MODE: record, burst, overlap, sigterm, overlap_sigterm, exit_in_request,
// first_delay, bad_args, codegen. Exit status 0 when every check passed.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "objdump_listing.h"

#include "check_support.h"

namespace {

using namespace target_check;

// --- the model ---------------------------------------------------------------

// Traced functions in the order trace_target prints them, with their arity
// and mangled name.
const std::vector<Traced> kTraced = {
    {"handle_request", 1, "_ZN3svc14handle_requestEPNS_7RequestE"},
    {"validate", 2, "_ZN3svc8validateEmm"},
    {"exit_now", 1, "_ZN3svc8exit_nowEm"},
    {"compute_price", 2, "_ZN3svc13compute_priceEmm"},
    {"apply_fee", 2, "_ZN3svc9apply_feeEmm"},
    {"settle", 1, "_ZN3svc6settleEm"},
    {"risky", 1, "_ZN3svc5riskyEm"},
    {"risky_inner", 1, "_ZN3svc11risky_innerEm"},
    {"recover", 1, "_ZN3svc7recoverEm"},
    {"forward", 1, "_ZN3svc7forwardEm"},
    {"finish", 1, "_ZN3svc6finishEm"},
    {"rendezvous", 1, "_ZN3svc10rendezvousEm"},
    {"tick", 1, "_ZN3svc4tickEm"},
};

std::string mangled(const std::string& name) { return find_traced(kTraced, name)->mangled; }

struct Config {
  uint64_t burst = 0;
  bool overlap = false;
  std::optional<uint64_t> exit_request;
};

// The common request (check_support.h) with trace_target's additions: the
// request cut by exit_now, the tail call forward -> finish for id % 4 == 1,
// rendezvous with --overlap, and --burst ticks.
ExpectedRequest expected_request(uint64_t id, const Config& config) {
  ServiceModel request(id);
  request.validate();
  if (config.exit_request && *config.exit_request == id) {
    request.enter("exit_now", {id});
    return request.cut({"handle_request", "exit_now"});
  }
  request.price("compute_price", "apply_fee");
  request.settle();
  request.risky();
  if (id % 4 == 1) {
    request.enter("forward", {id});
    request.line("~ forward");
    request.call("finish", id, id * 7 + 3);
  }
  if (config.overlap) request.call("rendezvous", id, id + 0x1000);
  for (uint64_t i = 0; i < config.burst; ++i) request.call("tick", i, i * 2 + 1);
  return request.done();
}

RequestModel model(const Config& config = {}) {
  return [config](uint64_t id) { return expected_request(id, config); };
}

TargetInfo target_info() {
  TargetInfo info;
  info.name = "trace_target";
  info.traced = kTraced;
  info.kinds = "><!~";  // ~: the tail call forward -> finish
  info.counts_cut = true;
  return info;
}

// --- modes -------------------------------------------------------------------

void mode_record(const Checker& checker) {
  const auto static_addresses = [&] {
    const auto symbols = xref::test::nm_symbols(checker.binary());
    std::map<std::string, uint64_t> addresses;
    for (const auto& traced : kTraced) addresses[traced.name] = xref::test::nm_symbol(symbols, traced.mangled).start;
    return addresses;
  };
  const Summary summary = checker.record_mode(static_addresses, model());
  // ids n and 1000000 + n: n % 5 == 3 for 4 of 20, n % 4 == 1 for 5 of 20, per worker.
  require(summary.requests == 40 && summary.unwinding == 8 && summary.tail == 10, "unexpected request mix");
}

void mode_burst(const Checker& checker) {
  const auto path = checker.fresh_record("burst");
  const Run run = checker.run(
      "burst", {"--threads", "1", "--requests", "6", "--interval-us", "0", "--burst", "300", "--record", path});
  checker.require_clean_exit(run);
  checker.check_startup(run);
  Expectation expect;
  expect.threads = 1;
  expect.requests = 6;
  Config config;
  config.burst = 300;
  const Summary summary = checker.check_record(path, run, expect, model(config));
  require(summary.events > 6 * 600, "burst requests should record over 600 events each");
}

void mode_overlap(const Checker& checker) {
  const auto path = checker.fresh_record("overlap");
  const Run run = checker.run(
      "overlap", {"--threads", "2", "--requests", "12", "--interval-us", "0", "--overlap", "--record", path});
  checker.require_clean_exit(run);
  checker.check_startup(run);
  Expectation expect;
  expect.requests = 12;
  Config config;
  config.overlap = true;
  checker.check_record(path, run, expect, model(config));
}

void mode_sigterm(const Checker& checker, bool overlap) {
  Expectation expect;
  expect.equal_counts = overlap;
  Config config;
  config.overlap = overlap;
  const Summary summary = checker.sigterm_mode(overlap ? "overlap_sigterm" : "sigterm",
                                               overlap ? std::vector<std::string>{"--overlap"} : std::vector<std::string>{},
                                               expect, model(config));
  require(summary.cut == 0, "no request may be cut by SIGTERM");
}

void mode_exit_in_request(const Checker& checker) {
  const auto path = checker.fresh_record("exit_in_request");
  const uint64_t exit_id = 1 * kStride + 7;
  const Run run = checker.run("exit_in_request", {"--threads", "2", "--requests", "20", "--interval-us", "200",
                                                  "--exit-in-request", std::to_string(exit_id), "--record", path});
  checker.require_clean_exit(run);
  checker.check_startup(run);
  Config config;
  config.exit_request = exit_id;
  const Summary summary = checker.check_record(path, run, Expectation{}, model(config));
  require(summary.cut == 1, "the request cut by exit_now was not flushed");
  require(summary.per_worker.at(1) == 8, "worker 1 should have recorded requests 0..7 and stopped");
  // The cut request is worker 1's last, and nothing of worker 1 follows it.
  const auto events = checker.read_record(path);
  std::optional<size_t> last_of_worker1;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].request / kStride == 1) last_of_worker1 = i;
  }
  require(last_of_worker1 && events[*last_of_worker1].request == exit_id &&
              events[*last_of_worker1].body == "> exit_now " + hex(exit_id),
          "worker 1's record should end with '> exit_now " + hex(exit_id) + "'");
}

void mode_first_delay(const Checker& checker) { checker.first_delay_mode({"--requests", "1"}, 1, model()); }

void mode_bad_args(const Checker& checker) {
  checker.bad_args_mode(
      {{"--threads", "0"}, {"--threads"}, {"--requests", "-1"}, {"--interval-us", "x"}, {"--bogus"}, {"--burst", "1k"}});
}

// --- codegen (objdump) --------------------------------------------------------

struct Code {
  std::vector<xref::test::ObjdumpInstruction> main_part;
  std::vector<xref::test::ObjdumpInstruction> cold_part;
  uint64_t start = 0, end = 0, cold_start = 0, cold_end = 0;
  bool contains(uint64_t address) const {
    return (address >= start && address < end) || (address >= cold_start && address < cold_end);
  }
  std::vector<xref::test::ObjdumpInstruction> all() const {
    auto both = main_part;
    both.insert(both.end(), cold_part.begin(), cold_part.end());
    return both;
  }
  bool calls(const std::string& symbol) const {
    for (const auto& instruction : all()) {
      if (instruction.is_call() && !instruction.indirect() && instruction.target_symbol() == symbol) return true;
    }
    return false;
  }
  size_t rets() const {
    size_t count = 0;
    for (const auto& instruction : main_part) count += instruction.is_ret();
    return count;
  }
};

void mode_codegen(const Checker& checker) {
  const std::string& target = checker.binary();
  const xref::test::ObjdumpListing listing(target);
  const auto symbols = xref::test::nm_symbols(target);
  for (const auto& symbol : symbols) {
    if (symbol.name.rfind("_ZN3svc", 0) != 0) continue;
    const size_t dot = symbol.name.find('.');
    require(dot == std::string::npos || symbol.name.substr(dot) == ".cold",
            "traced code was cloned or split unexpectedly: " + symbol.name);
  }
  std::map<std::string, Code> code;
  for (const auto& traced : kTraced) {
    const auto symbol = xref::test::nm_symbol(symbols, traced.mangled);
    require(symbol.type == "T" && symbol.size > 0, std::string(traced.mangled) + " should be a global function with a size");
    Code& entry = code[traced.name];
    entry.start = symbol.start;
    entry.end = symbol.start + symbol.size;
    entry.main_part = listing.in_range(entry.start, entry.end);
    for (const auto& cold : symbols) {
      if (cold.name == std::string(traced.mangled) + ".cold") {
        entry.cold_start = cold.start;
        entry.cold_end = cold.start + cold.size;
        entry.cold_part = listing.in_range(entry.cold_start, entry.cold_end);
      }
    }
    require(!entry.main_part.empty(), std::string("objdump shows no code for ") + traced.mangled);
  }

  // forward: ends in a direct `jmp finish`, has no ret and no call to finish.
  const Code& forward = code.at("forward");
  const auto& last = forward.main_part.back();
  require(last.is_jump() && !last.indirect() && last.target_symbol() == mangled("finish") &&
              last.direct_target() == code.at("finish").start,
          "forward must end in `jmp <" + mangled("finish") + ">`, ends in '" + last.mnemonic + " " + last.operands + "'");
  require(forward.rets() == 0 && forward.cold_part.empty(), "forward must have no ret and no cold part");
  require(!forward.calls(mangled("finish")), "forward calls finish instead of jumping to it");

  // Real calls the record's nesting relies on.
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"settle", "settle"},           {"risky", "risky_inner"},     {"compute_price", "apply_fee"},
      {"handle_request", "validate"}, {"handle_request", "exit_now"}, {"handle_request", "compute_price"},
      {"handle_request", "settle"},   {"handle_request", "risky"},    {"handle_request", "recover"},
      {"handle_request", "forward"},  {"handle_request", "rendezvous"}, {"handle_request", "tick"},
  };
  for (const auto& [caller, callee] : calls) {
    require(code.at(caller).calls(mangled(callee)), caller + " has no `call <" + mangled(callee) + ">`");
  }
  require(code.at("risky_inner").calls("__cxa_throw@plt"), "risky_inner has no call to __cxa_throw");

  for (const auto& traced : kTraced) {
    const std::string name = traced.name;
    const Code& entry = code.at(name);
    // No other tail calls: every direct jmp stays inside the function (main or
    // cold part), and no computed jumps.
    for (const auto& instruction : entry.all()) {
      if (name == "forward" && instruction.address == last.address) continue;
      if (!instruction.is_jump() && !instruction.is_conditional_jump()) continue;
      require(!instruction.indirect(), name + " has an indirect jump at " + hex(instruction.address));
      require(entry.contains(instruction.direct_target()),
              name + " jumps out of itself at " + hex(instruction.address) + ": " + instruction.operands);
    }
    // Return probes go on the rets of the function's own symbol: a cold part
    // must never return by itself.
    for (const auto& instruction : entry.cold_part) {
      require(!instruction.is_ret(), name + ".cold has a ret at " + hex(instruction.address));
    }
    if (name != "forward" && name != "exit_now") require(entry.rets() > 0, name + " has no ret");
    printf("%-15s %-40s size %3" PRIu64 ", %zu ret%s%s\n", traced.name, traced.mangled, entry.end - entry.start,
           entry.rets(), entry.rets() == 1 ? "" : "s",
           entry.cold_part.empty() ? "" : (", cold part of " + std::to_string(entry.cold_end - entry.cold_start) + " bytes").c_str());
  }
  printf("forward ends in: %s %s\n", last.mnemonic.c_str(), last.operands.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return checker_main(argc, argv, target_info(),
                      {
                          {"record", mode_record},
                          {"burst", mode_burst},
                          {"overlap", mode_overlap},
                          {"sigterm", [](const Checker& checker) { mode_sigterm(checker, false); }},
                          {"overlap_sigterm", [](const Checker& checker) { mode_sigterm(checker, true); }},
                          {"exit_in_request", mode_exit_in_request},
                          {"first_delay", mode_first_delay},
                          {"bad_args", mode_bad_args},
                          {"codegen", mode_codegen},
                      });
}
