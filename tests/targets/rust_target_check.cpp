// Checks rust_target against its contract: runs it in one mode, then
// compares its startup lines and its --record ground truth with an
// independent model of what every request must execute (function order,
// arguments, return values, the frames a panic unwound), or checks with nm,
// c++filt, readelf and objdump that the traced functions carry Rust mangled
// names and that the code really has the calls, rets and panic the trace
// tests rely on.
//
//   rust_target_check MODE TARGET WORK_DIR
//
// MODE: record, sigterm, first_delay, bad_args, codegen. Exit status 0 when
// every check passed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "objdump_listing.h"

#include "check_support.h"

namespace {

using namespace target_check;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  require(file.good(), "cannot open " + path);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// --- the model ---------------------------------------------------------------

constexpr uint64_t kStride = 1000000;
constexpr uint64_t kFeeBps = 25;
constexpr uint64_t kUnitPrice[5] = {0, 250, 1000, 40, 7};

// Traced functions in the order rust_target prints them, with their arity.
// Each is rust_target::svc::NAME.
struct Traced {
  const char* name;
  size_t arity;
};
const Traced kTraced[] = {
    {"handle_request", 1}, {"validate", 2}, {"compute", 2}, {"fee", 2},
    {"settle", 1},         {"risky", 1},    {"risky_inner", 1}, {"recover", 1},
};
constexpr size_t kTracedCount = sizeof kTraced / sizeof kTraced[0];

const Traced* find_traced(const std::string& name) {
  for (const auto& traced : kTraced) {
    if (name == traced.name) return &traced;
  }
  return nullptr;
}

// What one request must record, without the "TID REQ_ID " prefix. The
// handle_request entry argument (a stack address) is "> handle_request *".
std::vector<std::string> expected_request(uint64_t id) {
  const uint64_t n = id % kStride;
  const uint64_t asset = 1 + n % 4;
  const uint64_t amount = 100 + 37 * (n % 11);
  std::vector<std::string> lines;
  auto enter = [&](const char* name, std::initializer_list<uint64_t> args) {
    std::string line = std::string("> ") + name;
    for (uint64_t arg : args) line += " " + hex(arg);
    lines.push_back(line);
  };
  auto leave = [&](const char* name, uint64_t value) { lines.push_back(std::string("< ") + name + " " + hex(value)); };

  lines.push_back("> handle_request *");
  enter("validate", {id, amount});
  leave("validate", 1);
  const uint64_t price = amount * kUnitPrice[asset];
  const uint64_t fee = price + price * kFeeBps / 10000;
  enter("compute", {asset, amount});
  enter("fee", {price, kFeeBps});
  leave("fee", fee);
  leave("compute", fee + asset);
  uint64_t total = fee + asset;

  const uint64_t depth = 1 + id % 3;
  for (uint64_t d = depth + 1; d-- > 0;) enter("settle", {d});
  uint64_t settled = 1;
  leave("settle", settled);
  for (uint64_t d = 1; d <= depth; ++d) {
    settled = settled * 3 + d;
    leave("settle", settled);
  }
  total += settled;

  if (id % 5 == 3) {
    enter("risky", {id});
    enter("risky_inner", {id});
    lines.push_back("! risky_inner");
    lines.push_back("! risky");
    enter("recover", {id});
    leave("recover", id ^ 0x5a5a);
    total += id ^ 0x5a5a;
  }
  leave("handle_request", total);
  return lines;
}

// --- running the target ------------------------------------------------------

struct Run {
  pid_t pid = -1;
  std::vector<std::string> startup;  // stdout lines before "ready"
  std::string after_ready;           // anything printed after "ready"
  std::string stderr_text;           // everything printed on stderr
  int status = -1;                   // waitpid status
  milliseconds ready_to_exit{0};
};

// Starts TARGET ARGS... (stderr to WORK_DIR/rust_target_MODE.stderr), reads
// stdout, optionally sends SIGTERM `term_after` after "ready", and waits for
// the exit; fails if it takes over `limit`.
Run run_target(const std::string& target, const std::vector<std::string>& args, const std::string& stderr_path,
               std::optional<milliseconds> term_after = std::nullopt, milliseconds limit = milliseconds(20000)) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe2 failed");
  const int err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err_fd < 0) fail("cannot create " + stderr_path);
  std::vector<std::string> argv{target};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string command;
  for (const auto& arg : argv) command += (command.empty() ? "" : " ") + arg;
  printf("$ %s\n", command.c_str());
  fflush(stdout);
  Run run;
  run.pid = fork();
  if (run.pid < 0) fail("fork failed");
  if (run.pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  close(fds[1]);
  close(err_fd);
  const auto deadline = Clock::now() + limit;
  std::string pending;
  bool ready = false;
  std::optional<Clock::time_point> ready_at;
  bool terminated = false;
  while (true) {
    const auto now = Clock::now();
    if (now >= deadline) {
      kill(run.pid, SIGKILL);
      waitpid(run.pid, nullptr, 0);
      close(fds[0]);
      fail("target did not exit within " + std::to_string(limit.count()) + " ms: " + command);
    }
    if (ready && term_after && !terminated && now >= *ready_at + *term_after) {
      kill(run.pid, SIGTERM);
      terminated = true;
    }
    pollfd entry{fds[0], POLLIN, 0};
    if (poll(&entry, 1, 10) <= 0) continue;
    char buffer[4096];
    const ssize_t count = read(fds[0], buffer, sizeof buffer);
    if (count <= 0) break;
    if (ready) {
      run.after_ready.append(buffer, static_cast<size_t>(count));
      continue;
    }
    pending.append(buffer, static_cast<size_t>(count));
    size_t newline;
    while (!ready && (newline = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line == "ready") {
        ready = true;
        ready_at = Clock::now();
        run.after_ready = pending;
      } else {
        run.startup.push_back(line);
      }
    }
  }
  close(fds[0]);
  while (waitpid(run.pid, &run.status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(run.pid, SIGKILL);
      waitpid(run.pid, nullptr, 0);
      fail("target closed stdout but did not exit: " + command);
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  require(ready, "target never printed 'ready': " + command);
  run.ready_to_exit = std::chrono::duration_cast<milliseconds>(Clock::now() - *ready_at);
  run.stderr_text = read_file(stderr_path);
  return run;
}

void require_clean_exit(const Run& run) {
  require(WIFEXITED(run.status), "target did not exit normally (status " + std::to_string(run.status) + ")");
  require(WEXITSTATUS(run.status) == 0, "target exited with " + std::to_string(WEXITSTATUS(run.status)));
  require(run.stderr_text.empty(), "target printed on stderr (the panic hook must be silent): " + run.stderr_text);
}

// "func NAME 0xADDR" for every traced function in order, then "pid N".
std::map<std::string, uint64_t> check_startup(const Run& run) {
  std::map<std::string, uint64_t> addresses;
  require(run.startup.size() == kTracedCount + 1, "expected " + std::to_string(kTracedCount + 1) +
                                                      " lines before 'ready', got " +
                                                      std::to_string(run.startup.size()));
  std::set<uint64_t> distinct;
  for (size_t i = 0; i < kTracedCount; ++i) {
    const auto words = split_words(run.startup[i]);
    require(words.size() == 3 && words[0] == "func" && words[1] == kTraced[i].name && words[2].rfind("0x", 0) == 0,
            std::string("startup line ") + std::to_string(i + 1) + " should be 'func " + kTraced[i].name +
                " 0x...': '" + run.startup[i] + "'");
    addresses[words[1]] = std::stoull(words[2], nullptr, 16);
    distinct.insert(addresses[words[1]]);
  }
  require(distinct.size() == kTracedCount, "two traced functions share an address");
  require(run.startup[kTracedCount] == "pid " + std::to_string(run.pid),
          "expected 'pid " + std::to_string(run.pid) + "', got '" + run.startup[kTracedCount] + "'");
  require(run.after_ready.empty(), "target printed after 'ready': " + run.after_ready);
  return addresses;
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

// --- the record --------------------------------------------------------------

std::vector<Event> read_record(const std::string& path) {
  const std::string content = read_file(path);
  require(content.empty() || content.back() == '\n', "the record does not end with a newline");
  std::vector<Event> events;
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) {
    Event event;
    event.line_number = events.size() + 1;
    event.text = line;
    const std::string where = "record line " + std::to_string(event.line_number) + " '" + line + "': ";
    const auto words = split_words(line);
    require(words.size() >= 4 && line.find("  ") == std::string::npos, where + "malformed");
    require(is_decimal(words[0]) && is_decimal(words[1]), where + "TID and REQ_ID must be decimal");
    event.tid = std::stol(words[0]);
    event.request = std::stoull(words[1]);
    require(words[2] == ">" || words[2] == "<" || words[2] == "!", where + "kind must be one of > < !");
    event.kind = words[2][0];
    event.body = line.substr(words[0].size() + words[1].size() + 2);
    event.function = words[3];
    const Traced* traced = find_traced(event.function);
    require(traced != nullptr, where + "not a traced function");
    for (size_t i = 4; i < words.size(); ++i) {
      require(is_hex(words[i]), where + "values must be lowercase 0x-hex");
      event.values.push_back(std::stoull(words[i], nullptr, 16));
    }
    const size_t want = event.kind == '>' ? traced->arity : event.kind == '<' ? 1 : 0;
    require(event.values.size() == want, where + "expected " + std::to_string(want) + " values");
    events.push_back(event);
  }
  return events;
}

// Model-free shape check: frames nest, each is left exactly once (by < or !),
// ! lines come in one run from the innermost frame outwards, and the request
// ends with every frame left.
void check_nesting(const Block& block, const std::string& where_request) {
  std::vector<std::string> stack;
  for (size_t i = 0; i < block.events.size(); ++i) {
    const Event& event = block.events[i];
    const std::string where = "record line " + std::to_string(event.line_number) + " '" + event.text + "': ";
    if (i == 0) {
      require(event.kind == '>' && event.function == "handle_request", where + "a request starts with > handle_request");
    } else {
      require(!stack.empty(), where + "event after the request's handle_request was left");
    }
    if (event.kind == '>') {
      stack.push_back(event.function);
      continue;
    }
    require(!stack.empty() && stack.back() == event.function,
            where + "leaves " + event.function + " but the innermost open frame is " +
                (stack.empty() ? std::string("none") : stack.back()));
    stack.pop_back();
  }
  require(stack.empty(), where_request + "request ends with open frames (innermost " +
                             (stack.empty() ? std::string() : stack.back()) + ")");
}

struct Summary {
  size_t requests = 0, unwinding = 0, events = 0;
  std::map<uint64_t, uint64_t> per_worker;
};

// Every request of every worker, in order, exactly as the model says.
Summary check_record(const std::string& path, const Run& run, unsigned threads, std::optional<uint64_t> requests) {
  const auto events = read_record(path);
  const auto blocks = blocks_of(events);
  Summary summary;
  summary.events = events.size();
  std::map<long, uint64_t> worker_of_tid;
  std::map<uint64_t, long> tid_of_worker;
  std::set<uint64_t> seen;
  for (const Block& block : blocks) {
    const Event& first = block.events.front();
    const std::string where = "request " + std::to_string(block.request) + " (record line " +
                              std::to_string(first.line_number) + "): ";
    require(seen.insert(block.request).second, where + "appears twice or its lines are not contiguous");
    require(block.tid != run.pid, where + "recorded by the main thread, not a worker");
    const uint64_t worker = block.request / kStride;
    const uint64_t n = block.request % kStride;
    require(worker < threads, where + "no such worker");
    const auto tid_entry = worker_of_tid.emplace(block.tid, worker).first;
    require(tid_entry->second == worker, where + "TID " + std::to_string(block.tid) + " ran requests of two workers");
    const auto worker_entry = tid_of_worker.emplace(worker, block.tid).first;
    require(worker_entry->second == block.tid, where + "worker " + std::to_string(worker) + " ran on two TIDs");
    require(n == summary.per_worker[worker], where + "expected worker " + std::to_string(worker) + "'s request " +
                                                 std::to_string(summary.per_worker[worker]) + " next");
    summary.per_worker[worker] = n + 1;

    check_nesting(block, where);
    const auto expected = expected_request(block.request);
    for (size_t i = 0; i < std::max(expected.size(), block.events.size()); ++i) {
      const std::string want = i < expected.size() ? expected[i] : "(nothing)";
      const std::string got = i < block.events.size() ? block.events[i].body : "(nothing)";
      bool same = want == got;
      if (want == "> handle_request *" && i < block.events.size()) {
        // &Request: a nonzero, 8-byte aligned stack address.
        same = block.events[i].kind == '>' && block.events[i].function == "handle_request" &&
               block.events[i].values.size() == 1 && block.events[i].values[0] != 0 &&
               block.events[i].values[0] % 8 == 0;
      }
      require(same, where + "event " + std::to_string(i + 1) + ": expected '" + want + "', got '" + got + "'");
    }
    ++summary.requests;
    bool unwound = false;
    for (const auto& event : block.events) unwound |= event.kind == '!';
    require(unwound == (block.request % 5 == 3), where + "! lines must appear exactly when id % 5 == 3");
    summary.unwinding += unwound;
  }
  if (requests) {
    require(summary.per_worker.size() == threads, "expected requests from " + std::to_string(threads) +
                                                      " workers, got " + std::to_string(summary.per_worker.size()));
    for (const auto& [worker, count] : summary.per_worker) {
      require(count == *requests, "worker " + std::to_string(worker) + " ran " + std::to_string(count) +
                                      " requests, expected " + std::to_string(*requests));
    }
  }
  printf("record: %zu events, %zu requests (%zu with unwinding)", summary.events, summary.requests, summary.unwinding);
  for (const auto& [worker, count] : summary.per_worker) printf(", worker %" PRIu64 ": %" PRIu64, worker, count);
  printf("\n");
  return summary;
}

std::string fresh_record(const std::string& work_dir, const std::string& mode) {
  const std::string path = work_dir + "/rust_target_" + mode + ".record";
  unlink(path.c_str());
  return path;
}

std::string stderr_file(const std::string& work_dir, const std::string& mode) {
  return work_dir + "/rust_target_" + mode + ".stderr";
}

// --- modes -------------------------------------------------------------------

void mode_record(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "record");
  const Run run = run_target(target, {"--threads", "2", "--requests", "20", "--interval-us", "0", "--record", path},
                             stderr_file(work_dir, "record"));
  require_clean_exit(run);
  const auto addresses = check_startup(run);
  // The live addresses are the static ones plus one page-aligned load bias.
  const Symbols symbols = traced_symbols(target);
  std::optional<uint64_t> bias;
  for (const auto& traced : kTraced) {
    const uint64_t delta = addresses.at(traced.name) - symbols.traced.at(traced.name).start;
    if (!bias) bias = delta;
    require(delta == *bias, std::string("func ") + traced.name + " is not at its nm address plus the load bias");
  }
  require(*bias != 0 && *bias % 4096 == 0, "load bias " + hex(*bias) + " is not a nonzero page multiple (PIE)");
  const Summary summary = check_record(path, run, 2, 20);
  // ids n and 1000000 + n, n < 20: n % 5 == 3 for 4 of 20, per worker.
  require(summary.requests == 40 && summary.unwinding == 8, "unexpected request mix");
}

void mode_sigterm(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "sigterm");
  const Run run = run_target(target, {"--threads", "2", "--interval-us", "2000", "--record", path},
                             stderr_file(work_dir, "sigterm"), milliseconds(300));
  require_clean_exit(run);
  check_startup(run);
  const Summary summary = check_record(path, run, 2, std::nullopt);
  require(summary.per_worker.size() == 2, "both workers should have run requests before SIGTERM");
  require(summary.unwinding > 0, "no request with a caught panic ran before SIGTERM");
}

void mode_first_delay(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "first_delay");
  const Run run = run_target(target, {"--requests", "4", "--interval-us", "0", "--first-delay-ms", "400", "--record", path},
                             stderr_file(work_dir, "first_delay"));
  require_clean_exit(run);
  check_startup(run);
  require(run.ready_to_exit >= milliseconds(400),
          "exited " + std::to_string(run.ready_to_exit.count()) + " ms after ready, before the first delay ended");
  check_record(path, run, 1, 4);

  // SIGTERM during the delay: exit 0 promptly, no request started.
  const auto stopped = fresh_record(work_dir, "first_delay_stopped");
  const Run early = run_target(target, {"--first-delay-ms", "60000", "--record", stopped},
                               stderr_file(work_dir, "first_delay_stopped"), milliseconds(100), milliseconds(5000));
  require_clean_exit(early);
  require(read_record(stopped).empty(), "a request ran although SIGTERM came during the first delay");
}

void mode_bad_args(const std::string& target, const std::string& work_dir) {
  (void)work_dir;
  const std::vector<std::vector<std::string>> bad = {
      {"--threads", "0"},       {"--threads", "65"}, {"--threads"},  {"--requests", "-1"},
      {"--requests", "+1"},     {"--interval-us", "x"}, {"--bogus"}, {"--record"},
      {"--first-delay-ms", "1k"}};
  for (const auto& args : bad) {
    std::string command = target;
    for (const auto& arg : args) command += " " + arg;
    command += " >/dev/null 2>&1";
    const int status = system(command.c_str());
    require(WIFEXITED(status) && WEXITSTATUS(status) == 2, "expected exit status 2 from: " + command);
  }
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

void mode_codegen(const std::string& target, const std::string& work_dir) {
  (void)work_dir;
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
    require(find_traced(risky_caller) == nullptr, "risky is called by the traced " + risky_caller);
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
    const bool caller_traced = find_traced(caller) != nullptr;
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
  if (argc != 4) {
    fprintf(stderr, "usage: rust_target_check MODE TARGET WORK_DIR\n");
    return 2;
  }
  const std::string mode = argv[1], target = argv[2], work_dir = argv[3];
  try {
    if (mode == "record") {
      mode_record(target, work_dir);
    } else if (mode == "sigterm") {
      mode_sigterm(target, work_dir);
    } else if (mode == "first_delay") {
      mode_first_delay(target, work_dir);
    } else if (mode == "bad_args") {
      mode_bad_args(target, work_dir);
    } else if (mode == "codegen") {
      mode_codegen(target, work_dir);
    } else {
      fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const std::exception& error) {
    fprintf(stderr, "FAILED (%s): %s\n", mode.c_str(), error.what());
    return 1;
  }
  printf("ok: %s\n", mode.c_str());
  return 0;
}
