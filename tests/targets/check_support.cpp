#include "check_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

namespace target_check {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream file(path, std::ios::binary);
  require(file.good(), "cannot open " + what + path);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

const Traced* find_traced(const std::vector<Traced>& table, const std::string& name) {
  for (const auto& traced : table) {
    if (name == traced.name) return &traced;
  }
  return nullptr;
}

// --- the model ---------------------------------------------------------------

namespace {

constexpr uint64_t kFeeBps = 25;
constexpr uint64_t kUnitPrice[5] = {0, 250, 1000, 40, 7};

}  // namespace

void ServiceModel::enter(const char* name, std::initializer_list<uint64_t> args) {
  std::string text = std::string("> ") + name;
  for (uint64_t arg : args) text += " " + hex(arg);
  lines_.push_back(text);
}

void ServiceModel::leave(const char* name, uint64_t value) {
  lines_.push_back(std::string("< ") + name + " " + hex(value));
}

void ServiceModel::call(const char* name, uint64_t arg, uint64_t result) {
  enter(name, {arg});
  leave(name, result);
  total_ += result;
}

void ServiceModel::validate() {
  const uint64_t n = id_ % kStride;
  const uint64_t amount = 100 + 37 * (n % 11);
  lines_.push_back("> handle_request *");
  enter("validate", {id_, amount});
  leave("validate", 1);
}

void ServiceModel::price(const char* compute, const char* fee) {
  const uint64_t n = id_ % kStride;
  const uint64_t asset = 1 + n % 4;
  const uint64_t amount = 100 + 37 * (n % 11);
  const uint64_t price = amount * kUnitPrice[asset];
  const uint64_t with_fee = price + price * kFeeBps / 10000;
  enter(compute, {asset, amount});
  enter(fee, {price, kFeeBps});
  leave(fee, with_fee);
  leave(compute, with_fee + asset);
  total_ += with_fee + asset;
}

void ServiceModel::settle() {
  const uint64_t depth = 1 + id_ % 3;
  for (uint64_t d = depth + 1; d-- > 0;) enter("settle", {d});
  uint64_t settled = 1;
  leave("settle", settled);
  for (uint64_t d = 1; d <= depth; ++d) {
    settled = settled * 3 + d;
    leave("settle", settled);
  }
  total_ += settled;
}

void ServiceModel::risky() {
  if (id_ % 5 != 3) return;
  enter("risky", {id_});
  enter("risky_inner", {id_});
  lines_.push_back("! risky_inner");
  lines_.push_back("! risky");
  call("recover", id_, id_ ^ 0x5a5a);
}

ExpectedRequest ServiceModel::done() {
  leave("handle_request", total_);
  return ExpectedRequest{lines_, {}};
}

ExpectedRequest ServiceModel::cut(std::vector<std::string> open) const {
  return ExpectedRequest{lines_, std::move(open)};
}

// --- running the target ------------------------------------------------------

pid_t spawn_target(const std::string& target, const std::vector<std::string>& args, int stdout_fd, int stderr_fd,
                   std::string* command) {
  std::vector<std::string> argv{target};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string text;
  for (const auto& arg : argv) text += (text.empty() ? "" : " ") + arg;
  printf("$ %s\n", text.c_str());
  fflush(stdout);
  if (command != nullptr) *command = text;
  const pid_t pid = fork();
  if (pid < 0) fail("fork failed");
  if (pid == 0) {
    dup2(stdout_fd, STDOUT_FILENO);
    if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return pid;
}

namespace {

// Starts TARGET ARGS..., stderr to STDERR_PATH unless it is empty, reads
// stdout, optionally sends SIGTERM `term_after` after "ready", and waits for
// the exit; fails if it takes over `limit`.
Run run_target(const std::string& target, const std::vector<std::string>& args, const std::string& stderr_path,
               std::optional<milliseconds> term_after, milliseconds limit) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe2 failed");
  int err_fd = -1;
  if (!stderr_path.empty()) {
    err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) fail("cannot create " + stderr_path);
  }
  std::string command;
  Run run;
  run.pid = spawn_target(target, args, fds[1], err_fd, &command);
  close(fds[1]);
  if (err_fd >= 0) close(err_fd);
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
  if (!stderr_path.empty()) run.stderr_text = read_file(stderr_path);
  return run;
}

// "> < ! ~" for "><!~".
std::string spaced(const std::string& kinds) {
  std::string text;
  for (char kind : kinds) {
    if (!text.empty()) text += ' ';
    text += kind;
  }
  return text;
}

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

}  // namespace

std::string Checker::fresh_record(const std::string& label) const {
  const std::string path = work_dir_ + "/" + info_.name + "_" + label + ".record";
  unlink(path.c_str());
  return path;
}

Run Checker::run(const std::string& label, const std::vector<std::string>& args,
                 std::optional<milliseconds> term_after, milliseconds limit) const {
  const std::string stderr_path = info_.silent_stderr ? work_dir_ + "/" + info_.name + "_" + label + ".stderr" : "";
  return run_target(binary_, args, stderr_path, term_after, limit);
}

void Checker::require_clean_exit(const Run& run) const {
  require(WIFEXITED(run.status), "target did not exit normally (status " + std::to_string(run.status) + ")");
  require(WEXITSTATUS(run.status) == 0, "target exited with " + std::to_string(WEXITSTATUS(run.status)));
  if (info_.silent_stderr) {
    require(run.stderr_text.empty(), "target printed on stderr (the panic hook must be silent): " + run.stderr_text);
  }
}

std::map<std::string, uint64_t> Checker::check_startup(const Run& run) const {
  const auto& traced = info_.traced;
  const size_t count = traced.size();
  std::map<std::string, uint64_t> addresses;
  require(run.startup.size() == count + 1,
          "expected " + std::to_string(count + 1) + " lines before 'ready', got " + std::to_string(run.startup.size()));
  std::set<uint64_t> distinct;
  for (size_t i = 0; i < count; ++i) {
    const auto words = split_words(run.startup[i]);
    require(words.size() == 3 && words[0] == "func" && words[1] == traced[i].name && words[2].rfind("0x", 0) == 0,
            std::string("startup line ") + std::to_string(i + 1) + " should be 'func " + traced[i].name +
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

void Checker::check_load_bias(const std::map<std::string, uint64_t>& addresses,
                              const std::map<std::string, uint64_t>& static_addresses) const {
  std::optional<uint64_t> bias;
  for (const auto& traced : info_.traced) {
    const uint64_t delta = addresses.at(traced.name) - static_addresses.at(traced.name);
    if (!bias) bias = delta;
    require(delta == *bias, std::string("func ") + traced.name + " is not at its nm address plus the load bias");
  }
  require(*bias != 0 && *bias % 4096 == 0, "load bias " + hex(*bias) + " is not a nonzero page multiple (PIE)");
}

// --- the record --------------------------------------------------------------

std::vector<Event> Checker::read_record(const std::string& path) const {
  const std::string content = read_file(path, "the record ");
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
    require(words[2].size() == 1 && info_.kinds.find(words[2][0]) != std::string::npos,
            where + "kind must be one of " + spaced(info_.kinds));
    event.kind = words[2][0];
    event.body = line.substr(words[0].size() + words[1].size() + 2);
    event.function = words[3];
    const Traced* traced = find_traced(info_.traced, event.function);
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

Summary Checker::check_record(const std::string& path, const Run& run, const Expectation& expect,
                              const RequestModel& model) const {
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
    const auto tid_entry = worker_of_tid.emplace(block.tid, worker).first;
    require(tid_entry->second == worker, where + "TID " + std::to_string(block.tid) + " ran requests of two workers");
    const auto worker_entry = tid_of_worker.emplace(worker, block.tid).first;
    require(worker_entry->second == block.tid, where + "worker " + std::to_string(worker) + " ran on two TIDs");
    require(n == summary.per_worker[worker], where + "expected worker " + std::to_string(worker) + "'s request " +
                                                 std::to_string(summary.per_worker[worker]) + " next");
    summary.per_worker[worker] = n + 1;

    const auto open = check_nesting(block);
    const ExpectedRequest expected = model(block.request);
    const bool cut = !expected.open.empty();
    if (cut) {
      require(open == expected.open, where + "a request cut by " + expected.open.back() + " must leave " +
                                         joined(expected.open, " and ") + " open");
    } else {
      require(open.empty(), where + "request ends with open frames (innermost " +
                                (open.empty() ? std::string() : open.back()) + ")");
    }
    const auto& lines = expected.lines;
    for (size_t i = 0; i < std::max(lines.size(), block.events.size()); ++i) {
      const std::string want = i < lines.size() ? lines[i] : "(nothing)";
      const std::string got = i < block.events.size() ? block.events[i].body : "(nothing)";
      bool same = want == got;
      if (want == "> handle_request *" && i < block.events.size()) {
        // &Request: a nonzero stack address, aligned as the target says.
        same = block.events[i].kind == '>' && block.events[i].function == "handle_request" &&
               block.events[i].values.size() == 1 && block.events[i].values[0] != 0 &&
               block.events[i].values[0] % info_.request_alignment == 0;
      }
      require(same, where + "event " + std::to_string(i + 1) + ": expected '" + want + "', got '" + got + "'");
    }
    ++summary.requests;
    bool unwound = false, tail = false;
    for (const auto& event : block.events) {
      unwound |= event.kind == '!';
      tail |= event.kind == '~';
    }
    if (info_.check_request) info_.check_request(block, where);
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
  printf("record: %zu events, %zu requests (%zu with unwinding", summary.events, summary.requests, summary.unwinding);
  if (info_.kinds.find('~') != std::string::npos) printf(", %zu with a tail call", summary.tail);
  if (info_.counts_cut) printf(", %zu cut by exit", summary.cut);
  printf(")");
  for (const auto& [worker, count] : summary.per_worker) printf(", worker %" PRIu64 ": %" PRIu64, worker, count);
  printf("\n");
  return summary;
}

// --- modes -------------------------------------------------------------------

Summary Checker::record_mode(const std::function<std::map<std::string, uint64_t>()>& static_addresses,
                             const RequestModel& model) const {
  const auto path = fresh_record("record");
  const Run run = this->run("record", {"--threads", "2", "--requests", "20", "--interval-us", "0", "--record", path});
  require_clean_exit(run);
  const auto addresses = check_startup(run);
  check_load_bias(addresses, static_addresses());
  Expectation expect;
  expect.requests = 20;
  return check_record(path, run, expect, model);
}

Summary Checker::sigterm_mode(const std::string& label, const std::vector<std::string>& extra_args,
                              const Expectation& expect, const RequestModel& model) const {
  const auto path = fresh_record(label);
  std::vector<std::string> args{"--threads", "2", "--interval-us", "2000", "--record", path};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  const Run run = this->run(label, args, milliseconds(300));
  require_clean_exit(run);
  check_startup(run);
  const Summary summary = check_record(path, run, expect, model);
  require(summary.per_worker.size() == 2, "both workers should have run requests before SIGTERM");
  return summary;
}

void Checker::first_delay_mode(const std::vector<std::string>& request_args, uint64_t requests,
                               const RequestModel& model) const {
  const auto path = fresh_record("first_delay");
  std::vector<std::string> args = request_args;
  args.insert(args.end(), {"--first-delay-ms", "400", "--record", path});
  const Run run = this->run("first_delay", args);
  require_clean_exit(run);
  check_startup(run);
  require(run.ready_to_exit >= milliseconds(400),
          "exited " + std::to_string(run.ready_to_exit.count()) + " ms after ready, before the first delay ended");
  Expectation expect;
  expect.threads = 1;
  expect.requests = requests;
  check_record(path, run, expect, model);

  // SIGTERM during the delay: exit 0 promptly, no request started.
  const auto stopped = fresh_record("first_delay_stopped");
  const Run early = this->run("first_delay_stopped", {"--first-delay-ms", "60000", "--record", stopped},
                              milliseconds(100), milliseconds(5000));
  require_clean_exit(early);
  require(read_record(stopped).empty(), "a request ran although SIGTERM came during the first delay");
}

void Checker::bad_args_mode(const std::vector<std::vector<std::string>>& bad) const {
  for (const auto& args : bad) {
    std::string command = binary_;
    for (const auto& arg : args) command += " " + arg;
    command += " >/dev/null 2>&1";
    const int status = system(command.c_str());
    require(WIFEXITED(status) && WEXITSTATUS(status) == 2, "expected exit status 2 from: " + command);
  }
}

// --- main --------------------------------------------------------------------

int checker_main(int argc, char** argv, const TargetInfo& info,
                 const std::vector<std::pair<std::string, Mode>>& modes) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s_check MODE TARGET WORK_DIR\n", info.name.c_str());
    return 2;
  }
  const std::string mode = argv[1];
  const Checker checker(info, argv[2], argv[3]);
  const auto entry = std::find_if(modes.begin(), modes.end(), [&](const auto& known) { return known.first == mode; });
  if (entry == modes.end()) {
    fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  try {
    entry->second(checker);
  } catch (const std::exception& error) {
    fprintf(stderr, "FAILED (%s): %s\n", mode.c_str(), error.what());
    return 1;
  }
  printf("ok: %s\n", mode.c_str());
  return 0;
}

}  // namespace target_check
