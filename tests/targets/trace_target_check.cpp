// Checks trace_target against its contract: runs it in one mode, then
// compares its startup lines and its --record ground truth with an
// independent model of what every request must execute (function order,
// arguments, return values, unwound frames, the tail call), or checks with
// objdump that the code really has the calls, the tail jump and the rets the
// trace tests rely on.
//
//   trace_target_check MODE TARGET WORK_DIR
//
// MODE: record, burst, overlap, sigterm, overlap_sigterm, exit_in_request,
// first_delay, bad_args, codegen. Exit status 0 when every check passed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
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

// --- the model ---------------------------------------------------------------

constexpr uint64_t kStride = 1000000;
constexpr uint64_t kFeeBps = 25;
constexpr uint64_t kUnitPrice[5] = {0, 250, 1000, 40, 7};

// Traced functions in the order trace_target prints them, with their arity
// and mangled name.
struct Traced {
  const char* name;
  size_t arity;
  const char* mangled;
};
const Traced kTraced[] = {
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

const Traced* find_traced(const std::string& name) {
  for (const auto& traced : kTraced) {
    if (name == traced.name) return &traced;
  }
  return nullptr;
}

std::string mangled(const std::string& name) { return find_traced(name)->mangled; }

struct Config {
  uint64_t burst = 0;
  bool overlap = false;
  std::optional<uint64_t> exit_request;
};

// What one request must record, without the "TID REQ_ID " prefix. The
// handle_request entry argument (a stack pointer) is "> handle_request *".
// Sets *cut when the request ends in exit_now.
std::vector<std::string> expected_request(uint64_t id, const Config& config, bool* cut) {
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

  *cut = false;
  lines.push_back("> handle_request *");
  enter("validate", {id, amount});
  leave("validate", 1);
  if (config.exit_request && *config.exit_request == id) {
    enter("exit_now", {id});
    *cut = true;
    return lines;
  }
  const uint64_t price = amount * kUnitPrice[asset];
  const uint64_t fee = price + price * kFeeBps / 10000;
  enter("compute_price", {asset, amount});
  enter("apply_fee", {price, kFeeBps});
  leave("apply_fee", fee);
  leave("compute_price", fee + asset);
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
  if (id % 4 == 1) {
    enter("forward", {id});
    lines.push_back("~ forward");
    enter("finish", {id});
    leave("finish", id * 7 + 3);
    total += id * 7 + 3;
  }
  if (config.overlap) {
    enter("rendezvous", {id});
    leave("rendezvous", id + 0x1000);
    total += id + 0x1000;
  }
  for (uint64_t i = 0; i < config.burst; ++i) {
    enter("tick", {i});
    leave("tick", i * 2 + 1);
    total += i * 2 + 1;
  }
  leave("handle_request", total);
  return lines;
}

// --- running the target ------------------------------------------------------

struct Run {
  pid_t pid = -1;
  std::vector<std::string> startup;  // stdout lines before "ready"
  std::string after_ready;           // anything printed after "ready"
  int status = -1;                   // waitpid status
  milliseconds ready_to_exit{0};
};

// Starts TARGET ARGS..., reads stdout, optionally sends SIGTERM `term_after`
// after "ready", and waits for the exit; fails if it takes over `limit`.
Run run_target(const std::string& target, const std::vector<std::string>& args,
               std::optional<milliseconds> term_after = std::nullopt, milliseconds limit = milliseconds(20000)) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe2 failed");
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
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = Clock::now() + limit;
  std::string pending;
  bool ready = false;
  std::optional<Clock::time_point> ready_at;
  bool terminated = false;
  bool eof = false;
  while (!eof) {
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
    if (count <= 0) {
      eof = true;
      break;
    }
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
  return run;
}

void require_exit_zero(const Run& run) {
  require(WIFEXITED(run.status), "target did not exit normally (status " + std::to_string(run.status) + ")");
  require(WEXITSTATUS(run.status) == 0, "target exited with " + std::to_string(WEXITSTATUS(run.status)));
}

// "func NAME 0xADDR" for every traced function in order, then "pid N".
std::map<std::string, uint64_t> check_startup(const Run& run) {
  std::map<std::string, uint64_t> addresses;
  const size_t count = sizeof kTraced / sizeof kTraced[0];
  require(run.startup.size() == count + 1,
          "expected " + std::to_string(count + 1) + " lines before 'ready', got " + std::to_string(run.startup.size()));
  std::set<uint64_t> distinct;
  for (size_t i = 0; i < count; ++i) {
    const auto words = split_words(run.startup[i]);
    require(words.size() == 3 && words[0] == "func" && words[1] == kTraced[i].name && words[2].rfind("0x", 0) == 0,
            std::string("startup line ") + std::to_string(i + 1) + " should be 'func " + kTraced[i].name +
                " 0x...': '" + run.startup[i] + "'");
    addresses[words[1]] = std::stoull(words[2], nullptr, 16);
    distinct.insert(addresses[words[1]]);
  }
  require(distinct.size() == count, "two traced functions share an address");
  require(run.startup[count] == "pid " + std::to_string(run.pid),
          "expected 'pid " + std::to_string(run.pid) + "', got '" + run.startup[count] + "'");
  require(run.after_ready.empty(), "target printed after 'ready': " + run.after_ready);
  return addresses;
}

// --- the record --------------------------------------------------------------

std::vector<Event> read_record(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  require(file.good(), "cannot open the record " + path);
  std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  require(content.empty() || content.back() == '\n', "the record does not end with a newline");
  std::vector<Event> events;
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) {
    Event event;
    event.line_number = events.size() + 1;
    event.text = line;
    const std::string where = "record line " + std::to_string(event.line_number) + " '" + line + "': ";
    require(split_words(line).size() >= 4 && line.find("  ") == std::string::npos, where + "malformed");
    const auto words = split_words(line);
    require(is_decimal(words[0]) && is_decimal(words[1]), where + "TID and REQ_ID must be decimal");
    event.tid = std::stol(words[0]);
    event.request = std::stoull(words[1]);
    require(words[2].size() == 1 && std::string("><!~").find(words[2][0]) != std::string::npos,
            where + "kind must be one of > < ! ~");
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

// Model-free shape check: frames nest, each is left exactly once (by <, ! or
// ~), a ~ is immediately followed by the tail callee's entry, and ! lines
// come in a run from the innermost frame outwards. Returns the frames left
// open at the end.
std::vector<std::string> check_nesting(const Block& block) {
  std::vector<std::string> stack;
  for (size_t i = 0; i < block.events.size(); ++i) {
    const Event& event = block.events[i];
    const std::string where = "record line " + std::to_string(event.line_number) + " '" + event.text + "': ";
    if (i == 0) require(event.kind == '>' && event.function == "handle_request", where + "a request starts with > handle_request");
    if (i > 0) require(!stack.empty(), where + "event after the request's handle_request was left");
    if (i > 0 && block.events[i - 1].kind == '~') require(event.kind == '>', where + "a ~ must be followed by the tail callee's >");
    if (event.kind == '>') {
      stack.push_back(event.function);
      continue;
    }
    require(!stack.empty() && stack.back() == event.function,
            where + "leaves " + event.function + " but the innermost open frame is " +
                (stack.empty() ? std::string("none") : stack.back()));
    stack.pop_back();
  }
  return stack;
}

struct Expectation {
  Config config;
  unsigned threads = 2;
  std::optional<uint64_t> requests;  // exact count per thread, if known
  bool equal_counts = false;         // every thread ran the same number of requests
};

struct Summary {
  size_t requests = 0, unwinding = 0, tail = 0, cut = 0, events = 0;
  std::map<uint64_t, uint64_t> per_worker;
};

Summary check_record(const std::string& path, const Run& run, const Expectation& expect) {
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
    require(worker < expect.threads, where + "no such worker");
    auto [tid_it, new_tid] = worker_of_tid.emplace(block.tid, worker);
    require(tid_it->second == worker, where + "TID " + std::to_string(block.tid) + " ran requests of two workers");
    auto [worker_it, new_worker] = tid_of_worker.emplace(worker, block.tid);
    require(worker_it->second == block.tid, where + "worker " + std::to_string(worker) + " ran on two TIDs");
    (void)new_tid;
    (void)new_worker;
    require(n == summary.per_worker[worker], where + "expected worker " + std::to_string(worker) + "'s request " +
                                                 std::to_string(summary.per_worker[worker]) + " next");
    summary.per_worker[worker] = n + 1;

    const auto open = check_nesting(block);
    bool cut = false;
    const auto expected = expected_request(block.request, expect.config, &cut);
    if (cut) {
      require(open == std::vector<std::string>{"handle_request", "exit_now"},
              where + "a request cut by exit_now must leave handle_request and exit_now open");
    } else {
      require(open.empty(), where + "request ends with open frames (innermost " +
                                (open.empty() ? std::string() : open.back()) + ")");
    }
    for (size_t i = 0; i < std::max(expected.size(), block.events.size()); ++i) {
      const std::string want = i < expected.size() ? expected[i] : "(nothing)";
      const std::string got = i < block.events.size() ? block.events[i].body : "(nothing)";
      bool same = want == got;
      if (want == "> handle_request *" && i < block.events.size()) {
        same = block.events[i].kind == '>' && block.events[i].function == "handle_request" &&
               block.events[i].values.size() == 1 && block.events[i].values[0] != 0;
      }
      require(same, where + "event " + std::to_string(i + 1) + ": expected '" + want + "', got '" + got + "'");
    }
    ++summary.requests;
    bool unwound = false, tail = false;
    for (const auto& event : block.events) {
      unwound |= event.kind == '!';
      tail |= event.kind == '~';
    }
    summary.unwinding += unwound;
    summary.tail += tail;
    summary.cut += cut;
  }
  require(summary.cut <= 1, "more than one request was cut by exit_now");
  if (expect.requests || expect.equal_counts) {
    require(summary.per_worker.size() == expect.threads,
            "expected requests from " + std::to_string(expect.threads) + " workers, got " +
                std::to_string(summary.per_worker.size()));
    const uint64_t want = expect.requests ? *expect.requests : summary.per_worker.begin()->second;
    for (const auto& [worker, count] : summary.per_worker) {
      require(count == want, "worker " + std::to_string(worker) + " ran " + std::to_string(count) +
                                 " requests, expected " + std::to_string(want));
    }
  }
  printf("record: %zu events, %zu requests (%zu with unwinding, %zu with a tail call, %zu cut by exit)",
         summary.events, summary.requests, summary.unwinding, summary.tail, summary.cut);
  for (const auto& [worker, count] : summary.per_worker) printf(", worker %" PRIu64 ": %" PRIu64, worker, count);
  printf("\n");
  return summary;
}

std::string fresh_record(const std::string& work_dir, const std::string& mode) {
  const std::string path = work_dir + "/trace_target_" + mode + ".record";
  unlink(path.c_str());
  return path;
}

// --- modes -------------------------------------------------------------------

void mode_record(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "record");
  const Run run = run_target(target, {"--threads", "2", "--requests", "20", "--interval-us", "0", "--record", path});
  require_exit_zero(run);
  const auto addresses = check_startup(run);
  // The live addresses are the static ones plus one page-aligned load bias.
  const auto symbols = xref::test::nm_symbols(target);
  std::optional<uint64_t> bias;
  for (const auto& traced : kTraced) {
    const uint64_t static_va = xref::test::nm_symbol(symbols, traced.mangled).start;
    const uint64_t delta = addresses.at(traced.name) - static_va;
    if (!bias) bias = delta;
    require(delta == *bias, std::string("func ") + traced.name + " is not at its nm address plus the load bias");
  }
  require(*bias != 0 && *bias % 4096 == 0, "load bias " + hex(*bias) + " is not a nonzero page multiple (PIE)");
  Expectation expect;
  expect.requests = 20;
  const Summary summary = check_record(path, run, expect);
  // ids n and 1000000 + n: n % 5 == 3 for 4 of 20, n % 4 == 1 for 5 of 20, per worker.
  require(summary.requests == 40 && summary.unwinding == 8 && summary.tail == 10, "unexpected request mix");
}

void mode_burst(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "burst");
  const Run run = run_target(
      target, {"--threads", "1", "--requests", "6", "--interval-us", "0", "--burst", "300", "--record", path});
  require_exit_zero(run);
  check_startup(run);
  Expectation expect;
  expect.threads = 1;
  expect.requests = 6;
  expect.config.burst = 300;
  const Summary summary = check_record(path, run, expect);
  require(summary.events > 6 * 600, "burst requests should record over 600 events each");
}

void mode_overlap(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "overlap");
  const Run run = run_target(
      target, {"--threads", "2", "--requests", "12", "--interval-us", "0", "--overlap", "--record", path});
  require_exit_zero(run);
  check_startup(run);
  Expectation expect;
  expect.requests = 12;
  expect.config.overlap = true;
  check_record(path, run, expect);
}

void mode_sigterm(const std::string& target, const std::string& work_dir, bool overlap) {
  const auto path = fresh_record(work_dir, overlap ? "overlap_sigterm" : "sigterm");
  std::vector<std::string> args{"--threads", "2", "--interval-us", "2000", "--record", path};
  if (overlap) args.push_back("--overlap");
  const Run run = run_target(target, args, milliseconds(300));
  require_exit_zero(run);
  check_startup(run);
  Expectation expect;
  expect.config.overlap = overlap;
  expect.equal_counts = overlap;
  const Summary summary = check_record(path, run, expect);
  require(summary.per_worker.size() == 2, "both workers should have run requests before SIGTERM");
  require(summary.cut == 0, "no request may be cut by SIGTERM");
}

void mode_exit_in_request(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "exit_in_request");
  const uint64_t exit_id = 1 * kStride + 7;
  const Run run = run_target(target, {"--threads", "2", "--requests", "20", "--interval-us", "200",
                                      "--exit-in-request", std::to_string(exit_id), "--record", path});
  require_exit_zero(run);
  check_startup(run);
  Expectation expect;
  expect.config.exit_request = exit_id;
  const Summary summary = check_record(path, run, expect);
  require(summary.cut == 1, "the request cut by exit_now was not flushed");
  require(summary.per_worker.at(1) == 8, "worker 1 should have recorded requests 0..7 and stopped");
  // The cut request is worker 1's last, and nothing of worker 1 follows it.
  const auto events = read_record(path);
  std::optional<size_t> last_of_worker1;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].request / kStride == 1) last_of_worker1 = i;
  }
  require(last_of_worker1 && events[*last_of_worker1].request == exit_id &&
              events[*last_of_worker1].body == "> exit_now " + hex(exit_id),
          "worker 1's record should end with '> exit_now " + hex(exit_id) + "'");
}

void mode_first_delay(const std::string& target, const std::string& work_dir) {
  const auto path = fresh_record(work_dir, "first_delay");
  const Run run = run_target(target, {"--requests", "1", "--first-delay-ms", "400", "--record", path});
  require_exit_zero(run);
  check_startup(run);
  require(run.ready_to_exit >= milliseconds(400),
          "exited " + std::to_string(run.ready_to_exit.count()) + " ms after ready, before the first delay ended");
  Expectation expect;
  expect.threads = 1;
  expect.requests = 1;
  check_record(path, run, expect);

  // SIGTERM during the delay: exit 0 promptly, no request started.
  const auto stopped = fresh_record(work_dir, "first_delay_stopped");
  const Run early = run_target(target, {"--first-delay-ms", "60000", "--record", stopped}, milliseconds(100),
                               milliseconds(5000));
  require_exit_zero(early);
  require(read_record(stopped).empty(), "a request ran although SIGTERM came during the first delay");
}

void mode_bad_args(const std::string& target, const std::string& work_dir) {
  (void)work_dir;
  const std::vector<std::vector<std::string>> bad = {
      {"--threads", "0"}, {"--threads"}, {"--requests", "-1"}, {"--interval-us", "x"}, {"--bogus"}, {"--burst", "1k"}};
  for (const auto& args : bad) {
    std::string command = target;
    for (const auto& arg : args) command += " " + arg;
    command += " >/dev/null 2>&1";
    const int status = system(command.c_str());
    require(WIFEXITED(status) && WEXITSTATUS(status) == 2, "expected exit status 2 from: " + command);
  }
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

void mode_codegen(const std::string& target, const std::string& work_dir) {
  (void)work_dir;
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
  if (argc != 4) {
    fprintf(stderr, "usage: trace_target_check MODE TARGET WORK_DIR\n");
    return 2;
  }
  const std::string mode = argv[1], target = argv[2], work_dir = argv[3];
  try {
    if (mode == "record") {
      mode_record(target, work_dir);
    } else if (mode == "burst") {
      mode_burst(target, work_dir);
    } else if (mode == "overlap") {
      mode_overlap(target, work_dir);
    } else if (mode == "sigterm") {
      mode_sigterm(target, work_dir, false);
    } else if (mode == "overlap_sigterm") {
      mode_sigterm(target, work_dir, true);
    } else if (mode == "exit_in_request") {
      mode_exit_in_request(target, work_dir);
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
