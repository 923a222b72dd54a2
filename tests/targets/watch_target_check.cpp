// Checks watch_target against its contract: runs one build in one mode and
// proves its ground truth right, so the watch tests can compare against it.
//
//   watch_target_check MODE TARGET WORK_DIR
//
// Every run mode: the startup lines are well-formed and name live memory
// (globals at their nm address plus one load bias and in the binary's
// mapping, buf and moving in [heap], the threads in /proc/PID/task); nothing
// is written before go; the record matches an independent model of every
// round write by write (object, offset, length, writer, how, and the new
// value or its relation to the old one); replayed in the order g_total's
// values give, every OLD equals the bytes the writes before it left, and the
// result equals the `final` lines.
//
// MODE: record (2 threads), full (3 threads, --late-thread --realloc
// --read-fd --cas-miss), shared_slots (5 threads: g_counts slots shared,
// written under the lock), sigterm (until SIGTERM; also SIGTERM before go),
// bad_args, codegen (objdump: the instructions and libc calls the writers
// are named for). Exit status 0 when every check passed.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "check_support.h"
#include "command_output.h"
#include "objdump_listing.h"
#include "watch_target_record.h"

namespace {

using namespace target_check;
namespace wt = xref::test::watch_target;
using wt::Bytes;

// --- the model of one round (watch_target.c's run_round, written again) ----------

struct Options {
  unsigned threads = 2;
  uint64_t rounds = 20;  // 0: until SIGTERM
  uint64_t interval_us = 0;
  bool late_thread = false;
  uint64_t realloc_every = 0;
  bool read_fd = false;
  bool cas_miss = false;
  uint64_t follow_delay_us = 0;

  std::vector<std::string> args(const std::string& go, const std::string& record) const {
    std::vector<std::string> list{"--threads", std::to_string(threads), "--rounds", std::to_string(rounds),
                                  "--interval-us", std::to_string(interval_us), "--go", go, "--record", record};
    if (late_thread) list.push_back("--late-thread");
    if (realloc_every > 0) list.insert(list.end(), {"--realloc-every", std::to_string(realloc_every)});
    if (read_fd) list.push_back("--read-fd");
    if (cas_miss) list.push_back("--cas-miss");
    if (follow_delay_us > 0) list.insert(list.end(), {"--follow-delay-us", std::to_string(follow_delay_us)});
    return list;
  }
};

// One write the round must make. `offset` nullopt: not fixed by the round
// alone. The new value is given as bytes, or as a relation to the old value.
struct Expected {
  std::string object;
  std::optional<uint64_t> offset;
  uint64_t length;
  std::string function;
  std::string how;
  std::optional<Bytes> new_bytes;
  std::function<bool(uint64_t old_value, uint64_t new_value)> relation;
  std::string relation_text;
};

Bytes le(uint64_t value, size_t length) {
  Bytes bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
  return bytes;
}

Expected exact(std::string object, uint64_t offset, uint64_t length, std::string function, Bytes bytes,
               std::string how = "") {
  return Expected{std::move(object), offset, length, std::move(function), std::move(how), std::move(bytes), {}, ""};
}

Expected related(std::string object, std::optional<uint64_t> offset, uint64_t length, std::string function,
                 std::function<bool(uint64_t, uint64_t)> relation, std::string text) {
  return Expected{std::move(object), offset, length, std::move(function), "", std::nullopt, std::move(relation),
                  std::move(text)};
}

Expected plus(const std::string& object, uint64_t offset, uint64_t length, const std::string& function,
              uint64_t delta) {
  const uint64_t mask = length == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * length)) - 1;
  return related(object, offset, length, function,
                 [delta, mask](uint64_t old_value, uint64_t new_value) { return new_value == ((old_value + delta) & mask); },
                 "old + " + std::to_string(delta));
}

constexpr const char kNames[] = "watch_target_config_name_abcdef_0123456789";

std::vector<Expected> round_model(unsigned index, unsigned round, const Options& options) {
  const uint64_t w = index, r = round;
  const uint64_t k = 1 + (r + w) % 7;
  const unsigned slot = index % 4;
  const bool counts_locked = options.threads + (options.late_thread ? 1 : 0) > 4;
  (void)counts_locked;  // the same writes either way; only the lock around them differs
  std::vector<Expected> list;
  list.push_back(plus("g_total", 0, 8, "total_fetch_add", k));
  list.push_back(plus("g_total", 0, 8, "total_add", k + 1));
  list.push_back(plus("g_total", 0, 8, "total_exchange", 3));
  list.push_back(plus("g_total", 0, 8, "total_cas", 5));
  if (options.cas_miss) list.push_back(plus("g_total", 0, 8, "total_cas", 0));
  list.push_back(plus("g_total", 0, 8, "total_store", 11));
  list.push_back(exact("g_flag", 0, 1, "set_flag", le(r * 3 + w, 1)));
  list.push_back(exact("g_flag", 0, 1, "flag_exchange", le(0x80 | r, 1)));
  list.push_back(exact("g_config", 0, 1, "configure", le(r % 3 + 1, 1)));
  list.push_back(exact("g_config", 1, 1, "configure", le(r * 7, 1)));
  list.push_back(exact("g_config", 2, 2, "configure", le(8000 + r, 2)));
  list.push_back(related("g_config", 4, 4, "configure",
                         [r](uint64_t old_value, uint64_t new_value) { return new_value == (old_value | (1u << (r % 32))); },
                         "old | 1 << " + std::to_string(r % 32)));
  list.push_back(exact("g_config", 8, 8, "configure", le(r * 1000 + 1, 8)));
  list.push_back(related("g_config", 136, 8, "configure",
                         [r](uint64_t old_value, uint64_t new_value) { return new_value == old_value * 31 + r; },
                         "old * 31 + " + std::to_string(r)));
  Bytes window = r % 2 == 0 ? le(0x1000, 8) : le(0xabcdef0123456789, 8);
  const Bytes window_end = r % 2 == 0 ? le(0x2000, 8) : le(0x1122334455667788, 8);
  window.insert(window.end(), window_end.begin(), window_end.end());
  list.push_back(exact("g_config", 48, 16, "set_window", window));
  list.push_back(exact("g_config", 64 + 4 * ((r + w) % 8), 4, "set_weight", le(r * 100 + w, 4)));
  list.push_back(exact("g_config", 96, 8, "push_history", le(w << 32 | r, 8)));
  list.back().offset.reset();  // history[history_count % 4]: depends on every thread's pushes
  list.push_back(plus("g_config", 128, 2, "push_history", 1));
  const uint64_t name_length = 1 + (r * 5 + w) % 31;
  const std::string name = std::string(kNames).substr(r % 8, name_length);
  list.push_back(exact("g_config", 16, name_length, "rename_config", Bytes(name.begin(), name.end()), "via memcpy"));
  const uint64_t fill_at = (r * 11) % 200;
  for (uint64_t i = 0; i < 3 + r % 6; ++i) {
    list.push_back(exact("buf", fill_at + i, 1, "fill_bytes", le(w * 50 + r + i * 3, 1)));
  }
  const uint64_t copy_length = 8 + (r * 7) % 56;
  Bytes copied(copy_length);
  for (uint64_t i = 0; i < copy_length; ++i) copied[i] = static_cast<uint8_t>((r % 64 + i) * 7 + 1);
  list.push_back(exact("buf", (r * 17 + w) % 128, copy_length, "copy_in", copied, "via memcpy"));
  const uint64_t clear_length = 4 + (r * 3) % 60;
  list.push_back(exact("buf", (r * 29) % 192, clear_length, "clear_range", Bytes(clear_length, static_cast<uint8_t>(r)),
                       "via memset"));
  if (options.read_fd) {
    const uint64_t read_length = 5 + r % 40;
    Bytes piped(read_length);
    for (uint64_t i = 0; i < read_length; ++i) piped[i] = static_cast<uint8_t>((r ^ w) ^ (i * 13));
    list.push_back(exact("buf", (r * 13 + 5) % 200, read_length, "fill_from_pipe", piped, "kernel read"));
  }
  if (options.realloc_every > 0 && r % options.realloc_every == options.realloc_every - 1) {
    list.push_back(related("moving_slot", 0, 8, "move_buffer", [](uint64_t, uint64_t new_value) { return new_value != 0; },
                           "a block"));
    list.push_back(plus("moving", wt::kMovingLengthOffset, 8, "move_buffer", 32));
  }
  list.push_back(plus("moving", wt::kMovingWritesOffset, 8, "stamp_moving", 1));
  list.push_back(exact("moving", 0, 1, "stamp_moving", le(r + 0x40, 1)));
  list.back().offset.reset();  // data[round % (capacity - 32)]
  list.push_back(plus("g_counts", 4 * slot, 4, "count_slot", 1));
  list.push_back(plus("g_counts", 4 * slot, 4, "count_add", k));
  return list;
}

// Each of the thread's writes against the model, round by round; returns the
// number of rounds. With `whole_rounds` only: the record may stop after any
// whole round (SIGTERM), never inside one.
uint64_t check_thread(const std::vector<wt::Write>& writes, unsigned index, const Options& options,
                      std::optional<uint64_t> rounds) {
  size_t at = 0;
  uint64_t round = 0;
  while (at < writes.size()) {
    const auto model = round_model(index, static_cast<unsigned>(round), options);
    for (const Expected& expected : model) {
      const std::string what = "thread " + std::to_string(index) + " round " + std::to_string(round) + ": expected " +
                               expected.object + (expected.offset ? "+" + std::to_string(*expected.offset) : "") +
                               " by " + expected.function;
      require(at < writes.size(), what + ", but the thread's record ends inside the round");
      const wt::Write& write = writes[at++];
      const std::string where = what + ", got " + write.where();
      require(write.object == expected.object && write.function == expected.function && write.how == expected.how &&
                  write.length == expected.length && (!expected.offset || write.offset == *expected.offset),
              where);
      if (expected.new_bytes) {
        require(write.new_bytes == *expected.new_bytes, where + ": NEW should be " + wt::hex_of(*expected.new_bytes));
      }
      if (expected.relation) {
        require(expected.relation(write.old_value(), write.new_value()), where + ": NEW should be " + expected.relation_text);
      }
    }
    ++round;
  }
  if (rounds) require(round == *rounds, "thread " + std::to_string(index) + " ran " + std::to_string(round) +
                                            " rounds, expected " + std::to_string(*rounds));
  return round;
}

// --- running the target ---------------------------------------------------------------

struct Run {
  pid_t pid = -1;
  int out = -1;
  std::string pending;
  std::vector<std::string> startup;  // before "ready"
  std::vector<std::string> exit_lines;
  std::string stderr_path;
  int status = -1;
};

bool read_line(Run& run, std::string& line, Clock::time_point deadline) {
  while (true) {
    const size_t newline = run.pending.find('\n');
    if (newline != std::string::npos) {
      line = run.pending.substr(0, newline);
      run.pending.erase(0, newline + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    require(left > 0, "watch_target printed no whole line in time (pending: '" + run.pending + "')");
    pollfd fd{run.out, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left)) <= 0) continue;
    char chunk[4096];
    const ssize_t got = read(run.out, chunk, sizeof chunk);
    if (got <= 0) return false;
    run.pending.append(chunk, static_cast<size_t>(got));
  }
}

// A safety net, not a measurement: a hung target fails the test instead of
// waiting for ctest's timeout.
constexpr milliseconds kLimit(60000);

Run launch(const std::string& binary, const std::vector<std::string>& args, const std::string& stderr_path) {
  int fds[2];
  require(pipe2(fds, O_CLOEXEC) == 0, "pipe2 failed");
  const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  require(err >= 0, "cannot create " + stderr_path);
  Run run;
  run.stderr_path = stderr_path;
  run.pid = spawn_target(binary, args, fds[1], err);
  close(fds[1]);
  close(err);
  run.out = fds[0];
  const auto deadline = Clock::now() + kLimit;
  std::string line;
  while (true) {
    require(read_line(run, line, deadline), "watch_target ended before 'ready'");
    if (line == "ready") break;
    run.startup.push_back(line);
  }
  return run;
}

void finish(Run& run) {
  const auto deadline = Clock::now() + kLimit;
  std::string line;
  while (read_line(run, line, deadline)) run.exit_lines.push_back(line);
  require(run.pending.empty(), "watch_target's last line has no newline: " + run.pending);
  close(run.out);
  while (waitpid(run.pid, &run.status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(run.pid, SIGKILL);
      waitpid(run.pid, nullptr, 0);
      fail("watch_target closed stdout but did not exit");
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  require(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0,
          "watch_target did not exit with status 0 (wait status " + std::to_string(run.status) + "); stderr: " +
              read_file(run.stderr_path));
  require(read_file(run.stderr_path).empty(), "watch_target printed on stderr: " + read_file(run.stderr_path));
}

std::set<long> tasks_of(pid_t pid) {
  std::set<long> tids;
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(path.c_str());
  require(dir != nullptr, "cannot list " + path);
  while (const dirent* entry = readdir(dir)) {
    if (wt::is_decimal(entry->d_name)) tids.insert(std::stol(entry->d_name));
  }
  closedir(dir);
  return tids;
}

// The /proc/PID/maps line holding `address`: its path ("[heap]", the binary).
std::string mapping_of(pid_t pid, uint64_t address) {
  std::istringstream maps(read_file("/proc/" + std::to_string(pid) + "/maps"));
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    if (sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64, &start, &end) != 2 || address < start || address >= end) continue;
    const auto words = split_words(line);
    return words.size() >= 6 ? words[5] : "";
  }
  return "(unmapped)";
}

// --- one checked run ---------------------------------------------------------------------

struct Outcome {
  wt::Startup startup;
  wt::Exit exit;
  std::vector<wt::Write> writes;
  std::map<long, std::vector<wt::Write>> threads;
  std::map<long, unsigned> index_of_tid;
  wt::Replay replay;
  std::set<long> tasks_at_go;
};

struct Context {
  std::string binary;
  std::string work_dir;
  std::string label;  // the build and mode: file names in WORK_DIR
};

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  require(realpath(path.c_str(), resolved) != nullptr, "cannot resolve " + path);
  return resolved;
}

void check_startup(const Context& context, const Run& run, const wt::Startup& startup, const Options& options) {
  const std::map<std::string, uint64_t> sizes = {{"g_total", 8}, {"g_counts", 16}, {"g_flag", 1}, {"g_config", 144},
                                                 {"buf", 256},   {"moving", 64},   {"moving_slot", 8}};
  for (const auto& object : startup.objects) {
    require(object.size == sizes.at(object.name), "obj " + object.name + " should be " +
                                                      std::to_string(sizes.at(object.name)) + " bytes");
  }
  require(startup.pid == run.pid, "pid line says " + std::to_string(startup.pid) + ", the child is " +
                                      std::to_string(run.pid));
  require(startup.threads.size() == options.threads, "expected a thread line per worker");
  std::set<long> expected_tasks{run.pid};
  for (const auto& [name, tid] : startup.threads) expected_tasks.insert(tid);
  require(expected_tasks.size() == options.threads + 1, "two workers share a TID");
  require(tasks_of(run.pid) == expected_tasks, "/proc/PID/task is not the main thread and the workers");
  // Live memory: globals in the binary's own mapping at nm's address plus one
  // load bias, heap objects in [heap].
  const std::string binary = real_path(context.binary);
  const bool stripped = file_name(context.binary) == "watch_target_stripped";
  const auto symbols = stripped ? std::vector<xref::test::NmSymbol>{} : xref::test::nm_symbols(context.binary);
  std::optional<uint64_t> bias;
  for (const auto& object : startup.objects) {
    const std::string mapping = mapping_of(run.pid, object.address);
    const bool heap = object.name == "buf" || object.name == "moving";
    require(mapping == (heap ? "[heap]" : binary),
            "obj " + object.name + " at " + hex(object.address) + " is in '" + mapping + "', expected " +
                (heap ? "[heap]" : binary));
    if (heap) continue;
    require(object.address % 64 == 0, "obj " + object.name + " is not on its own cache line");
    if (symbols.empty()) continue;  // stripped
    const uint64_t delta = object.address - xref::test::nm_symbol(symbols, object.name).start;
    if (!bias) bias = delta;
    require(delta == *bias, "obj " + object.name + " is not at its nm address plus the load bias");
  }
  const bool pie = xref::test::command_output("readelf -h " + context.binary).find("DYN (") != std::string::npos;
  if (stripped) {
    require(xref::test::command_output("readelf -S " + context.binary).find(".symtab") == std::string::npos,
            "watch_target_stripped still has a .symtab");
  } else {
    require(bias.has_value(), "nm lists none of the globals");
    require(pie ? (*bias != 0 && *bias % 4096 == 0) : *bias == 0,
            "load bias " + hex(*bias) + (pie ? " is not a nonzero page multiple (PIE)" : " should be 0 (non-PIE)"));
  }
}

// The record's whole lines so far: a round being appended may show in part.
std::vector<wt::Write> whole_lines(const std::string& path) {
  std::ifstream file(path);
  std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  content.erase(content.rfind('\n') == std::string::npos ? 0 : content.rfind('\n') + 1);
  std::vector<wt::Write> writes;
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) writes.push_back(wt::parse_write(line, writes.size() + 1));
  return writes;
}

// With `stop_when`: SIGTERM once the record satisfies it (polled every 10 ms).
using StopWhen = std::function<bool(const std::vector<wt::Write>& writes)>;

Outcome run_checked(const Context& context, const Options& options, const StopWhen& stop_when = {}) {
  const std::string base = context.work_dir + "/" + context.label;
  const std::string record = base + ".record", go = base + ".go";
  unlink(record.c_str());
  unlink(go.c_str());
  Run run = launch(context.binary, options.args(go, record), base + ".stderr");
  Outcome outcome;
  outcome.startup = wt::parse_startup(run.startup);
  check_startup(context, run, outcome.startup, options);
  // Nothing is written before go.
  std::this_thread::sleep_for(milliseconds(100));
  require(wt::read_record(record).empty(), "watch_target recorded writes before go");
  outcome.tasks_at_go = tasks_of(run.pid);
  const int go_fd = open(go.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  require(go_fd >= 0, "cannot create " + go);
  close(go_fd);
  if (stop_when) {
    while (!stop_when(whole_lines(record))) std::this_thread::sleep_for(milliseconds(10));
    kill(run.pid, SIGTERM);
  }
  finish(run);
  outcome.exit = wt::parse_exit(run.exit_lines);
  require(outcome.exit.late_tid.has_value() == options.late_thread, "a 'thread late TID' line iff --late-thread");
  outcome.writes = wt::read_record(record);
  outcome.threads = wt::by_thread(outcome.writes);
  for (const auto& [name, tid] : outcome.startup.threads) outcome.index_of_tid[tid] = static_cast<unsigned>(std::stoul(name.substr(6)));
  if (outcome.exit.late_tid) {
    require(!outcome.tasks_at_go.count(*outcome.exit.late_tid), "the late thread existed before go");
    outcome.index_of_tid[*outcome.exit.late_tid] = options.threads;
  }
  for (const auto& [tid, list] : outcome.threads) {
    require(outcome.index_of_tid.count(tid), "record line " + std::to_string(list.front().line_number) +
                                                 ": TID " + std::to_string(tid) + " is no writer thread");
  }
  // Every thread's writes, round by round, against the model.
  std::optional<uint64_t> rounds;
  if (options.rounds > 0) rounds = options.rounds;
  uint64_t all_rounds = 0;
  for (const auto& [tid, index] : outcome.index_of_tid) {
    all_rounds += check_thread(outcome.threads[tid], index, options, rounds);
  }
  // One order of all threads' writes in which every OLD is what was there.
  outcome.replay = wt::replay(outcome.startup, outcome.writes);
  for (const auto& name : wt::object_names()) {
    const Bytes& final_bytes = outcome.exit.finals.at(name);
    const wt::KnownBytes& known = outcome.replay.bytes.at(name);
    uint64_t size = outcome.startup.object(name).size;
    if (name == "moving") size = wt::value_of(Bytes(final_bytes.begin() + wt::kMovingLengthOffset,
                                                     final_bytes.begin() + wt::kMovingLengthOffset + 8));
    require(final_bytes.size() == size, "final " + name + " has " + std::to_string(final_bytes.size()) +
                                            " bytes, expected " + std::to_string(size));
    require(known.size() <= size, "the record writes beyond " + name + "'s final size");
    size_t checked = 0;
    for (size_t i = 0; i < known.size(); ++i) {
      if (!known[i]) continue;
      ++checked;
      require(*known[i] == final_bytes[i], "final " + name + " byte " + std::to_string(i) + " is " +
                                               wt::hex_of({final_bytes[i]}) + ", the replayed record says " +
                                               wt::hex_of({*known[i]}));
    }
    if (!outcome.writes.empty() && (name != "moving_slot" || options.realloc_every > 0)) {
      require(checked > 0, "the record never wrote " + name);
    }
  }
  require(outcome.replay.moving_address == wt::value_of(outcome.exit.finals.at("moving_slot")),
          "the replayed moving_slot is not the final one");
  printf("record: %zu writes by %zu threads in %" PRIu64 " rounds, %u moves; replayed in g_total's order, equal to the "
         "final lines\n",
         outcome.writes.size(), outcome.threads.size(), all_rounds, outcome.replay.moves);
  return outcome;
}

size_t count_writes(const Outcome& outcome, const std::function<bool(const wt::Write&)>& which) {
  return static_cast<size_t>(std::count_if(outcome.writes.begin(), outcome.writes.end(), which));
}

// --- modes ---------------------------------------------------------------------------

void mode_record(const Context& context) {
  Options options;
  options.threads = 2;
  options.rounds = 30;
  const Outcome outcome = run_checked(context, options);
  require(outcome.threads.size() == 2, "both workers should have written");
  require(count_writes(outcome, [](const wt::Write& w) { return w.how == "kernel read"; }) == 0,
          "kernel reads without --read-fd");
  require(outcome.replay.moves == 0, "moving moved without --realloc");
  // What watches of parts of g_config see: its limit field, and the first 4
  // bytes of its name (rename_config's memcpy writes 1 to 31 of them).
  size_t limit_writes = 0, name_writes = 0;
  for (const auto& write : outcome.writes) {
    if (const auto part = wt::clip(write, "g_config", 8, 8)) {
      ++limit_writes;
      require(part->function == "configure" && part->length == 8 && part->new_bytes == write.new_bytes,
              write.where() + ": not configure's 8-byte write of limit");
    }
    if (const auto part = wt::clip(write, "g_config", 16, 4)) {
      ++name_writes;
      require(part->function == "rename_config" && part->length == std::min<uint64_t>(write.length, 4) &&
                  std::equal(part->new_bytes.begin(), part->new_bytes.end(), write.new_bytes.begin()),
              write.where() + ": clipped to g_config+16:4 wrongly");
    }
  }
  require(limit_writes == 60 && name_writes == 60, "expected 60 writes of g_config's limit and of its name");
}

void mode_full(const Context& context) {
  Options options;
  options.threads = 3;
  options.rounds = 24;
  options.interval_us = 200;
  options.late_thread = true;
  options.realloc_every = 4;
  options.read_fd = true;
  options.cas_miss = true;
  options.follow_delay_us = 100;
  const Outcome outcome = run_checked(context, options);
  require(outcome.threads.size() == 4, "three workers and the late thread should have written");
  // The late thread: started after go and after a worker's first round.
  const long late = *outcome.exit.late_tid;
  const auto& order = outcome.replay.order;
  const auto first_late = std::find_if(order.begin(), order.end(), [&](size_t i) { return outcome.writes[i].tid == late; });
  std::map<long, size_t> before_late;
  for (auto it = order.begin(); it != first_late; ++it) ++before_late[outcome.writes[*it].tid];
  const size_t round_length = round_model(0, 0, options).size();
  require(std::any_of(before_late.begin(), before_late.end(), [&](const auto& entry) { return entry.second >= round_length; }),
          "no worker finished a round before the late thread's first write");
  // realloc: every move really moved (6 per thread), the new capacity written after it.
  const size_t moves = count_writes(outcome, [](const wt::Write& w) { return w.object == "moving_slot"; });
  require(moves == 4 * 6 && outcome.replay.moves == moves,
          "expected 24 moves that changed moving_slot, got " + std::to_string(outcome.replay.moves) + " of " +
              std::to_string(moves));
  const size_t kernel = count_writes(outcome, [](const wt::Write& w) { return w.by_kernel(); });
  require(kernel == 4 * 24, "expected 96 kernel reads, got " + std::to_string(kernel));
  const size_t misses = count_writes(outcome, [](const wt::Write& w) { return w.object == "g_total" && !w.changed(); });
  require(misses == 4 * 24, "expected a failed cmpxchg (old == new) per round, got " + std::to_string(misses));
  std::set<uint32_t> generations;
  for (size_t i = 0; i < outcome.writes.size(); ++i) {
    if (outcome.writes[i].object == "moving") generations.insert(outcome.replay.generation[i]);
  }
  require(generations.size() == moves + 1, "moving should be written in each of its blocks");
  printf("late thread %ld: first write after %zu writes; %zu moves, %zu kernel reads, %zu failed cmpxchg\n", late,
         static_cast<size_t>(first_late - order.begin()), moves, kernel, misses);
}

void mode_shared_slots(const Context& context) {
  Options options;
  options.threads = 5;  // slot 0 is worker 0's and worker 4's: written under the lock
  options.rounds = 12;
  const Outcome outcome = run_checked(context, options);
  require(outcome.threads.size() == 5, "all five workers should have written");
}

void mode_sigterm(const Context& context) {
  Options options;
  options.threads = 2;
  options.rounds = 0;
  options.interval_us = 2000;
  options.realloc_every = 3;
  options.read_fd = true;
  // SIGTERM once both workers flushed 3 rounds (moving has moved).
  const size_t round_length = round_model(0, 0, options).size();
  const Outcome outcome = run_checked(context, options, [&](const std::vector<wt::Write>& writes) {
    std::map<long, size_t> per_thread;
    for (const auto& write : writes) ++per_thread[write.tid];
    return per_thread.size() == 2 && std::all_of(per_thread.begin(), per_thread.end(), [&](const auto& entry) {
             return entry.second >= 3 * round_length;
           });
  });
  require(outcome.threads.size() == 2 && outcome.replay.moves >= 2, "both workers should have moved `moving`");

  // SIGTERM while waiting for go: exit 0 at once, no write.
  const std::string base = context.work_dir + "/" + context.label + "_before_go";
  const std::string record = base + ".record", go = base + ".go";
  unlink(record.c_str());
  unlink(go.c_str());
  Run run = launch(context.binary, options.args(go, record), base + ".stderr");
  kill(run.pid, SIGTERM);
  finish(run);
  const wt::Exit exit = wt::parse_exit(run.exit_lines);
  require(wt::read_record(record).empty(), "a write was recorded although SIGTERM came before go");
  require(wt::value_of(exit.finals.at("g_total")) == 0, "g_total was written before go");
  printf("SIGTERM before go: exit 0, nothing recorded\n");
}

void mode_bad_args(const Context& context) {
  const std::vector<std::vector<std::string>> bad = {
      {"--threads", "0"}, {"--threads", "17"}, {"--threads"},        {"--rounds", "-1"}, {"--interval-us", "x"},
      {"--bogus"},        {"--go", ""},        {"--realloc-every", "0"}, {"--follow-delay-us", "1e3"}};
  for (const auto& args : bad) {
    std::string command = context.binary;
    for (const auto& arg : args) command += " '" + arg + "'";
    const std::string err = context.work_dir + "/" + context.label + ".stderr";
    const int status = system((command + " >/dev/null 2>" + err).c_str());
    require(WIFEXITED(status) && WEXITSTATUS(status) == 2, "expected exit status 2 from: " + command);
    require(read_file(err).find("usage: watch_target") != std::string::npos, "no usage line from: " + command);
  }
  printf("%zu bad argument lists: exit status 2 and a usage line\n", bad.size());
}

// --- codegen (objdump) ----------------------------------------------------------------

// objdump's lines of one function ("lock xadd %rbx,0x4023(%rip)  # 6400 <g_total>").
std::map<std::string, std::vector<std::string>> function_lines(const std::string& binary) {
  std::map<std::string, std::vector<std::string>> functions;
  std::vector<std::string>* current = nullptr;
  for (const auto& line : xref::test::command_lines("objdump -d --no-show-raw-insn " + binary)) {
    if (!line.empty() && line[0] != ' ' && line.size() > 3 && line.substr(line.size() - 2) == ">:") {
      const size_t open = line.find(" <");
      current = &functions[line.substr(open + 2, line.size() - open - 4)];
      continue;
    }
    const size_t tab = line.find(":\t");
    if (current != nullptr && tab != std::string::npos && !line.empty() && line[0] == ' ') {
      current->push_back(line.substr(tab + 2));
    }
  }
  return functions;
}

bool has_line(const std::vector<std::string>& lines, const std::function<bool(const std::string&)>& match) {
  return std::any_of(lines.begin(), lines.end(), match);
}

bool starts(const std::string& line, const std::string& prefix) { return line.rfind(prefix, 0) == 0; }
bool contains(const std::string& line, const std::string& part) { return line.find(part) != std::string::npos; }

// An instruction's operands, split at the commas outside parentheses
// ("$0x1", "0x4063c0(,%r9,4)"), without objdump's "# ..." comment.
std::vector<std::string> operands_of(const std::string& line) {
  std::string text = line.substr(std::min(line.size(), line.find(' ')));
  if (const size_t hash = text.find('#'); hash != std::string::npos) text.erase(hash);
  std::vector<std::string> operands(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0) {
      operands.emplace_back();
    } else if (c != ' ') {
      operands.back() += c;
    }
  }
  return operands;
}

// A store to memory that is not the stack: AT&T's destination is the last operand.
bool stores_outside_stack(const std::string& line) {
  const size_t space = line.find(' ');
  if (space == std::string::npos) return false;
  const std::string mnemonic = line.substr(0, space);
  if (starts(mnemonic, "cmp") || starts(mnemonic, "test") || starts(mnemonic, "lea") || starts(mnemonic, "push") ||
      starts(mnemonic, "call") || starts(mnemonic, "j") || contains(line, "nop")) {
    return false;
  }
  const std::string destination = operands_of(line).back();
  return contains(destination, "(") && !contains(destination, "%rsp");
}

// A 1-byte store: movb, or a byte register as the source.
bool stores_byte(const std::string& line) {
  if (!stores_outside_stack(line)) return false;
  if (starts(line, "movb ")) return true;
  const auto operands = operands_of(line);
  if (!starts(line, "mov ") || operands.size() != 2) return false;
  const std::string& source = operands[0];
  static const std::vector<std::string> registers = {"%al", "%bl", "%cl", "%dl", "%sil", "%dil", "%bpl", "%spl"};
  for (const auto& name : registers) {
    if (source.find(name) != std::string::npos) return true;
  }
  return source.size() > 3 && source.find("%r") != std::string::npos && source.back() == 'b';
}

void mode_codegen(const Context& context) {
  const auto functions = function_lines(context.binary);
  const auto lines = [&](const std::string& name) -> const std::vector<std::string>& {
    const auto found = functions.find(name);
    require(found != functions.end() && !found->second.empty(), "objdump shows no function " + name);
    return found->second;
  };
  // Writers keep their own symbols: no clones (a .cold part is allowed).
  const std::vector<std::string> writers = {
      "total_fetch_add", "total_add",   "total_exchange", "total_cas",     "total_store",  "count_slot",
      "count_add",       "set_flag",    "flag_exchange",  "configure",     "set_window",   "set_weight",
      "push_history",    "rename_config", "fill_bytes",   "copy_in",       "clear_range",  "fill_from_pipe",
      "move_buffer",     "stamp_moving"};
  for (const auto& [name, body] : functions) {
    const size_t dot = name.find('.');
    if (dot == std::string::npos) continue;
    const std::string base = name.substr(0, dot);
    require(std::find(writers.begin(), writers.end(), base) == writers.end() || name.substr(dot) == ".cold",
            "a writer was cloned: " + name);
  }
  const auto require_line = [&](const std::string& function, const std::string& what,
                                const std::function<bool(const std::string&)>& match) {
    require(has_line(lines(function), match), function + " should have " + what);
    printf("%-16s %s\n", function.c_str(), what.c_str());
  };
  const auto to_object = [](const std::string& object) {
    return [object](const std::string& line) { return contains(line, "<" + object + ">") || contains(line, "<" + object + "+"); };
  };
  require_line("total_fetch_add", "lock xadd to g_total",
               [&](const std::string& l) { return starts(l, "lock xadd") && to_object("g_total")(l); });
  require_line("total_add", "lock add to g_total",
               [&](const std::string& l) { return starts(l, "lock add") && to_object("g_total")(l); });
  require_line("total_exchange", "xchg with g_total",
               [&](const std::string& l) { return starts(l, "xchg") && to_object("g_total")(l); });
  require_line("total_cas", "lock cmpxchg to g_total",
               [&](const std::string& l) { return starts(l, "lock cmpxchg") && to_object("g_total")(l); });
  require_line("total_store", "a plain 8-byte mov to g_total", [&](const std::string& l) {
    const auto operands = operands_of(l);
    return starts(l, "mov ") && operands.size() == 2 && starts(operands[0], "%r") && stores_outside_stack(l) &&
           to_object("g_total")(l);
  });
  require_line("set_flag", "a 1-byte mov to g_flag",
               [&](const std::string& l) { return stores_byte(l) && to_object("g_flag")(l); });
  require_line("flag_exchange", "a 1-byte xchg with g_flag", [&](const std::string& l) {
    return starts(l, "xchg") && to_object("g_flag")(l);
  });
  const auto memory_rmw = [](const std::string& mnemonics) {
    return [mnemonics](const std::string& l) {
      const std::string mnemonic = l.substr(0, l.find(' '));
      return contains(mnemonics, " " + mnemonic + " ") && stores_outside_stack(l);
    };
  };
  require_line("count_slot", "an add/inc of memory", memory_rmw(" addl incl add inc "));
  require_line("count_add", "an add of memory", memory_rmw(" addl add "));
  require_line("configure", "an or of memory", memory_rmw(" orl or "));
  require_line("push_history", "a 2-byte add/inc of memory", memory_rmw(" addw incw "));
  require_line("stamp_moving", "an 8-byte add/inc of memory", memory_rmw(" addq incq "));
  // set_window: one 16-byte vector store and no other store outside the stack.
  const auto& window = lines("set_window");
  const size_t vector_stores = static_cast<size_t>(std::count_if(window.begin(), window.end(), [](const std::string& l) {
    return (starts(l, "movups") || starts(l, "movdqu") || starts(l, "movaps") || starts(l, "movdqa")) &&
           starts(operands_of(l)[0], "%xmm") && stores_outside_stack(l);
  }));
  const size_t other_stores = static_cast<size_t>(std::count_if(window.begin(), window.end(), [](const std::string& l) {
    return stores_outside_stack(l) && !contains(l, "%xmm");
  }));
  require(vector_stores == 1 && other_stores == 0,
          "set_window should store g_config.window with one 16-byte vector store, has " +
              std::to_string(vector_stores) + " and " + std::to_string(other_stores) + " other stores");
  printf("%-16s %s\n", "set_window", "one 16-byte vector store");
  // Real libc calls (not inlined, not tail jumps): the contract writers.
  const std::vector<std::pair<std::string, std::string>> calls = {{"copy_in", "memcpy"},
                                                                  {"rename_config", "memcpy"},
                                                                  {"clear_range", "memset"},
                                                                  {"fill_from_pipe", "read"},
                                                                  {"move_buffer", "realloc"}};
  for (const auto& [function, callee] : calls) {
    require_line(function, "call " + callee + "@plt",
                 [&](const std::string& l) { return starts(l, "call") && contains(l, "<" + callee + "@plt>"); });
    require(!has_line(lines(function), [&](const std::string& l) { return starts(l, "jmp") && contains(l, "<" + callee); }),
            function + " tail-jumps to " + callee);
  }
  // Every store these writers make outside their stack frame is one the
  // record lists (each runs once per execution of the function, or once per
  // loop iteration in fill_bytes): nothing they write goes unrecorded.
  const std::vector<std::pair<std::string, size_t>> store_counts = {
      {"total_fetch_add", 1}, {"total_add", 1},  {"total_exchange", 1}, {"total_cas", 1},   {"total_store", 1},
      {"count_slot", 1},      {"count_add", 1},  {"set_flag", 1},       {"flag_exchange", 1}, {"configure", 6},
      {"set_window", 1},      {"set_weight", 1}, {"push_history", 2},   {"fill_bytes", 1},  {"stamp_moving", 2}};
  for (const auto& [function, count] : store_counts) {
    const auto& body = lines(function);
    const auto stores = static_cast<size_t>(std::count_if(body.begin(), body.end(), stores_outside_stack));
    require(stores == count, function + " has " + std::to_string(stores) + " stores outside its stack frame, expected " +
                                 std::to_string(count));
  }
  printf("store instructions outside the stack: as many as the writes the record lists\n");
  // The byte loop stores single bytes.
  require_line("fill_bytes", "a 1-byte store", stores_byte);
  require_line("stamp_moving", "a 1-byte store", stores_byte);
}

}  // namespace

int main(int argc, char** argv) {
  TargetInfo info;
  info.name = "watch_target";
  // Each mode runs in WORK_DIR under its own names: the build and the mode.
  const auto with_context = [](const char* mode, void (*run)(const Context&)) {
    return std::pair<std::string, Mode>(mode, [mode, run](const Checker& checker) {
      run(Context{checker.binary(), checker.work_dir(), file_name(checker.binary()) + "_" + mode});
    });
  };
  return checker_main(argc, argv, info,
                      {with_context("record", mode_record), with_context("full", mode_full),
                       with_context("shared_slots", mode_shared_slots), with_context("sigterm", mode_sigterm),
                       with_context("bad_args", mode_bad_args), with_context("codegen", mode_codegen)});
}
