// Checks rust_target against its contract: runs it in one mode, then
// compares its startup lines and its --record ground truth with an
// independent model of what every request must execute (function order,
// arguments, return values, the frames a panic unwound), or checks with nm,
// c++filt, readelf and objdump that the traced functions carry Rust mangled
// names and that the code really has the calls, rets and panic the trace
// tests rely on. What it shares with trace_target_check is in
// check_support.h.
//
//   rust_target_check MODE TARGET WORK_DIR
//
// MODE: record, sigterm, first_delay, bad_args, codegen. Exit status 0 when
// every check passed.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "objdump_listing.h"

#include "check_support.h"

namespace {

using namespace target_check;

// --- the model ---------------------------------------------------------------

// Traced functions in the order rust_target prints them, with their arity.
// Each is rust_target::svc::NAME.
const std::vector<Traced> kTraced = {
    {"handle_request", 1}, {"validate", 2}, {"compute", 2}, {"fee", 2},
    {"settle", 1},         {"risky", 1},    {"risky_inner", 1}, {"recover", 1},
};

// The common request (check_support.h) under rust_target's names.
ExpectedRequest expected_request(uint64_t id) {
  ServiceModel request(id);
  request.validate();
  request.price("compute", "fee");
  request.settle();
  request.risky();
  return request.done();
}

// A panic is caught (and unwinds ! lines) exactly in the requests that call risky.
void check_request(const Block& block, const std::string& where) {
  bool unwound = false;
  for (const auto& event : block.events) unwound |= event.kind == '!';
  require(unwound == (block.request % 5 == 3), where + "! lines must appear exactly when id % 5 == 3");
}

TargetInfo target_info() {
  TargetInfo info;
  info.name = "rust_target";
  info.traced = kTraced;
  info.kinds = "><!";            // no tail calls
  info.request_alignment = 8;    // &Request: an 8-byte aligned stack address
  info.silent_stderr = true;     // the panic hook must print nothing
  info.check_request = check_request;
  return info;
}

// --- symbols -----------------------------------------------------------------

// rustc's mangled name of rust_target::svc::NAME, legacy or v0:
//   _ZN11rust_target3svc<len><name>17h<16 hex>E
//   _RNvNtCs<base62>_11rust_target3svc<len><name>
bool is_mangled_svc(const std::string& symbol, const std::string& name) {
  const std::string tail = "11rust_target3svc" + std::to_string(name.size()) + name;
  if (symbol.rfind("_ZN" + tail + "17h", 0) == 0) {
    const std::string hash = symbol.substr(3 + tail.size() + 3);
    return hash.size() == 17 && hash.back() == 'E' &&
           hash.find_first_not_of("0123456789abcdef") == 16;
  }
  if (symbol.rfind("_RNvNtCs", 0) == 0 && symbol.size() > tail.size() &&
      symbol.compare(symbol.size() - tail.size(), tail.size(), tail) == 0) {
    const std::string disambiguator = symbol.substr(8, symbol.size() - tail.size() - 8);
    return disambiguator.size() >= 2 && disambiguator.back() == '_' &&
           disambiguator.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
               disambiguator.size() - 1;
  }
  return false;
}

struct Symbols {
  std::vector<xref::test::NmSymbol> all;
  std::map<std::string, xref::test::NmSymbol> traced;  // by plain name
};

Symbols traced_symbols(const std::string& target) {
  Symbols symbols;
  symbols.all = xref::test::nm_symbols(target);
  for (const auto& traced : kTraced) {
    std::vector<xref::test::NmSymbol> found;
    for (const auto& symbol : symbols.all) {
      if (is_mangled_svc(symbol.name, traced.name)) found.push_back(symbol);
    }
    require(found.size() == 1, std::string("expected one mangled symbol for rust_target::svc::") + traced.name +
                                   ", nm lists " + std::to_string(found.size()));
    symbols.traced[traced.name] = found.front();
  }
  return symbols;
}

// c++filt's name without the legacy "::h<hash>" suffix and v0 "[disambiguator]"s.
std::string demangled_plain(const std::string& mangled_name) {
  const auto lines = xref::test::command_lines("c++filt '" + mangled_name + "'");
  require(lines.size() == 1, "c++filt printed " + std::to_string(lines.size()) + " lines for " + mangled_name);
  std::string name = lines.front();
  const size_t hash = name.rfind("::h");
  if (hash != std::string::npos && name.size() - hash == 19) name.erase(hash);
  for (size_t open; (open = name.find('[')) != std::string::npos;) {
    const size_t close = name.find(']', open);
    require(close != std::string::npos, "unbalanced [ in " + lines.front());
    name.erase(open, close - open + 1);
  }
  return name;
}

// --- modes -------------------------------------------------------------------

void mode_record(const Checker& checker) {
  const auto static_addresses = [&] {
    const Symbols symbols = traced_symbols(checker.binary());
    std::map<std::string, uint64_t> addresses;
    for (const auto& [name, symbol] : symbols.traced) addresses[name] = symbol.start;
    return addresses;
  };
  const Summary summary = checker.record_mode(static_addresses, expected_request);
  // ids n and 1000000 + n, n < 20: n % 5 == 3 for 4 of 20, per worker.
  require(summary.requests == 40 && summary.unwinding == 8, "unexpected request mix");
}

void mode_sigterm(const Checker& checker) {
  const Summary summary = checker.sigterm_mode("sigterm", {}, Expectation{}, expected_request);
  require(summary.unwinding > 0, "no request with a caught panic ran before SIGTERM");
}

void mode_first_delay(const Checker& checker) {
  checker.first_delay_mode({"--requests", "4", "--interval-us", "0"}, 4, expected_request);
}

void mode_bad_args(const Checker& checker) {
  checker.bad_args_mode({{"--threads", "0"},
                         {"--threads", "65"},
                         {"--threads"},
                         {"--requests", "-1"},
                         {"--requests", "+1"},
                         {"--interval-us", "x"},
                         {"--bogus"},
                         {"--record"},
                         {"--first-delay-ms", "1k"}});
}

// --- codegen (nm, c++filt, readelf, objdump) -------------------------------------

// The function (nm text symbol with a size) an address lies in.
class FunctionIndex {
 public:
  explicit FunctionIndex(const std::vector<xref::test::NmSymbol>& symbols) {
    for (const auto& symbol : symbols) {
      if (symbol.is_text() && symbol.size > 0) by_start_[symbol.start] = symbol;
    }
  }
  std::optional<xref::test::NmSymbol> containing(uint64_t address) const {
    auto it = by_start_.upper_bound(address);
    if (it == by_start_.begin()) return std::nullopt;
    --it;
    if (address >= it->second.start + it->second.size) return std::nullopt;
    return it->second;
  }

 private:
  std::map<uint64_t, xref::test::NmSymbol> by_start_;
};

// GOT slots filled at load time with a known address: rustc calls std's
// functions through the GOT (`call *slot(%rip)`), and in a PIE the slot gets
// an R_X86_64_RELATIVE relocation whose addend is the callee.
std::map<uint64_t, uint64_t> relative_slots(const std::string& target) {
  std::map<uint64_t, uint64_t> slots;
  for (const auto& line : xref::test::command_lines("readelf -rW " + target)) {
    const auto words = split_words(line);
    if (words.size() == 4 && words[2] == "R_X86_64_RELATIVE") {
      slots[std::stoull(words[0], nullptr, 16)] = std::stoull(words[3], nullptr, 16);
    }
  }
  return slots;
}

void mode_codegen(const Checker& checker) {
  const std::string& target = checker.binary();
  const Symbols symbols = traced_symbols(target);
  const FunctionIndex functions(symbols.all);
  const xref::test::ObjdumpListing listing(target);

  // No clones (.llvm.N, .specialized.N, .cold) of anything in rust_target::svc.
  for (const auto& symbol : symbols.all) {
    if (symbol.name.find("11rust_target3svc") != std::string::npos) {
      require(symbol.name.find('.') == std::string::npos, "traced code was cloned or split: " + symbol.name);
    }
  }

  // Every direct call in the binary whose target is a traced function, as
  // caller -> callee edges (caller: a traced name, or the mangled symbol).
  std::map<uint64_t, std::string> traced_at;
  for (const auto& [name, symbol] : symbols.traced) traced_at[symbol.start] = name;
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& instruction : listing.in_range(0, UINT64_MAX)) {
    if (!instruction.is_call() || instruction.indirect()) continue;
    const auto callee = traced_at.find(instruction.direct_target());
    if (callee == traced_at.end()) continue;
    const auto caller = functions.containing(instruction.address);
    require(caller.has_value(), "a call to " + callee->second + " at " + hex(instruction.address) + " is in no function");
    const auto caller_name = traced_at.find(caller->start);
    edges.insert({caller_name != traced_at.end() ? caller_name->second : caller->name, callee->second});
  }
  auto has_edge = [&](const std::string& caller, const std::string& callee) { return edges.count({caller, callee}) > 0; };

  // The calls the record's nesting relies on.
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"handle_request", "validate"}, {"handle_request", "compute"}, {"compute", "fee"},
      {"handle_request", "settle"},   {"settle", "settle"},          {"risky", "risky_inner"},
      {"handle_request", "recover"},
  };
  for (const auto& [caller, callee] : calls) require(has_edge(caller, callee), caller + " has no `call " + callee + "`");

  // risky is called from handle_request's catch_unwind: by handle_request
  // itself when the closure is inlined, else by the closure (or std's
  // do_call) that handle_request calls.
  std::string risky_caller;
  for (const auto& [caller, callee] : edges) {
    if (callee != "risky") continue;
    require(risky_caller.empty(), "risky has two callers: " + risky_caller + " and " + caller);
    risky_caller = caller;
  }
  require(!risky_caller.empty(), "nothing calls risky directly");
  if (risky_caller != "handle_request") {
    require(find_traced(kTraced, risky_caller) == nullptr, "risky is called by the traced " + risky_caller);
    bool reached = false;
    const auto& start = symbols.traced.at("handle_request");
    for (const auto& instruction : listing.in_range(start.start, start.start + start.size)) {
      reached |= instruction.is_call() && !instruction.indirect() && instruction.target_symbol() == risky_caller;
    }
    require(reached, "risky's caller " + risky_caller + " is not called by handle_request");
  }

  // Only the expected edges among traced functions, and handle_request is
  // called by untraced code alone (the worker loop): the recording helpers add
  // no traced call.
  for (const auto& [caller, callee] : edges) {
    const bool caller_traced = find_traced(kTraced, caller) != nullptr;
    if (callee == "handle_request") {
      require(!caller_traced, caller + " calls handle_request");
      continue;
    }
    if (callee == "risky" && caller == risky_caller) continue;
    const bool expected = std::find(calls.begin(), calls.end(), std::make_pair(caller, callee)) != calls.end();
    require(expected, "unexpected call " + caller + " -> " + callee);
  }

  // risky_inner panics: a call to core/std's panic entry, directly or
  // through a GOT slot.
  const auto slots = relative_slots(target);
  const auto& inner = symbols.traced.at("risky_inner");
  std::string panic_callee;
  for (const auto& instruction : listing.in_range(inner.start, inner.start + inner.size)) {
    if (!instruction.is_call()) continue;
    std::optional<uint64_t> callee_address;
    if (!instruction.indirect()) {
      callee_address = instruction.direct_target();
    } else if (instruction.operands.find("(%rip)") != std::string::npos && instruction.comment_address()) {
      const auto slot = slots.find(*instruction.comment_address());
      if (slot != slots.end()) callee_address = slot->second;
    }
    if (!callee_address) continue;
    const auto callee = functions.containing(*callee_address);
    if (callee && callee->start == *callee_address && callee->name.find("panic") != std::string::npos) {
      panic_callee = callee->name;
    }
  }
  require(!panic_callee.empty(), "risky_inner has no call to a panic function");

  // Every traced function returns through its own ret: no tail calls (no
  // direct jmp leaves the function), no computed jumps.
  for (const auto& traced : kTraced) {
    const auto& symbol = symbols.traced.at(traced.name);
    require(symbol.is_text() && symbol.size > 0, std::string(traced.name) + " should be a text symbol with a size");
    const auto code = listing.in_range(symbol.start, symbol.start + symbol.size);
    require(!code.empty(), std::string("objdump shows no code for ") + symbol.name);
    size_t rets = 0;
    for (const auto& instruction : code) {
      rets += instruction.is_ret();
      if (!instruction.is_jump() && !instruction.is_conditional_jump()) continue;
      require(!instruction.indirect(), std::string(traced.name) + " has an indirect jump at " + hex(instruction.address));
      require(instruction.direct_target() >= symbol.start && instruction.direct_target() < symbol.start + symbol.size,
              std::string(traced.name) + " jumps out of itself at " + hex(instruction.address) + ": " +
                  instruction.operands);
    }
    require(rets > 0, std::string(traced.name) + " has no ret");
    const std::string demangled = demangled_plain(symbol.name);
    require(demangled == std::string("rust_target::svc::") + traced.name,
            symbol.name + " demangles to " + demangled + ", expected rust_target::svc::" + traced.name);
    printf("%-15s %-56s %s, size %3" PRIu64 ", %zu ret%s\n", traced.name, symbol.name.c_str(), demangled.c_str(),
           symbol.size, rets, rets == 1 ? "" : "s");
  }
  printf("risky is called by %s; risky_inner panics through %s\n", risky_caller.c_str(), panic_callee.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return checker_main(argc, argv, target_info(),
                      {
                          {"record", mode_record},
                          {"sigterm", mode_sigterm},
                          {"first_delay", mode_first_delay},
                          {"bad_args", mode_bad_args},
                          {"codegen", mode_codegen},
                      });
}
