// What the target checkers (trace_target_check, rust_target_check) share:
// failing a check, running the target, its startup lines, reading the record
// it writes and checking it request by request against a model, the common
// part of that model, the modes that differ only in arguments, and main().
//
// A checker keeps what is specific to its target: the traced-function table,
// the calls its model adds to the common request, the arguments of each mode,
// its extra assertions, and its codegen check. It describes its target with a
// TargetInfo and hands its modes to checker_main().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace target_check {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& message) { throw Failure(message); }

inline void require(bool condition, const std::string& message) {
  if (!condition) fail(message);
}

inline std::string hex(uint64_t value) {
  char text[32];
  snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

inline std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word) words.push_back(word);
  return words;
}

// The whole file; fails with "cannot open WHAT PATH".
std::string read_file(const std::string& path, const std::string& what = "");

struct Event {
  size_t line_number = 0;
  std::string text;
  long tid = 0;
  uint64_t request = 0;
  char kind = 0;
  std::string function;
  std::vector<uint64_t> values;
  std::string body;  // the line without "TID REQ_ID "
};

inline bool is_decimal(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos &&
         (word == "0" || word[0] != '0');
}

inline bool is_hex(const std::string& word) {
  return word.size() > 2 && word.rfind("0x", 0) == 0 &&
         word.find_first_not_of("0123456789abcdef", 2) == std::string::npos && (word == "0x0" || word[2] != '0');
}

struct Block {
  long tid;
  uint64_t request;
  std::vector<Event> events;
};

// Consecutive lines of one (TID, REQ_ID): one request, since each request is
// appended with a single write().
inline std::vector<Block> blocks_of(const std::vector<Event>& events) {
  std::vector<Block> blocks;
  for (const auto& event : events) {
    if (blocks.empty() || blocks.back().tid != event.tid || blocks.back().request != event.request) {
      blocks.push_back(Block{event.tid, event.request, {}});
    }
    blocks.back().events.push_back(event);
  }
  return blocks;
}

// --- the target --------------------------------------------------------------

// A traced function as the target prints it ("func NAME 0xADDR"), with the
// number of arguments its > lines record and, where it is fixed, its symbol.
struct Traced {
  const char* name;
  size_t arity;
  const char* mangled = nullptr;  // nullptr where the checker finds the symbol itself
};

const Traced* find_traced(const std::vector<Traced>& table, const std::string& name);

// Worker W's request n has the id W * kStride + n, in every target.
constexpr uint64_t kStride = 1000000;

// What one request must record, lines without the "TID REQ_ID " prefix.
// handle_request's entry (its argument is a stack address) is
// "> handle_request *". A request cut short (by exit_now) names the frames it
// leaves open, outermost first; a complete one leaves none.
struct ExpectedRequest {
  std::vector<std::string> lines;
  std::vector<std::string> open;
};

using RequestModel = std::function<ExpectedRequest(uint64_t id)>;

// The request every target serves, under the target's own function names:
// handle_request validates, prices with a fee, settles recursively and, for
// id % 5 == 3, calls risky, whose risky_inner throws or panics, then recover.
// A target's model adds its own calls between these steps.
class ServiceModel {
 public:
  explicit ServiceModel(uint64_t id) : id_(id) {}

  void enter(const char* name, std::initializer_list<uint64_t> args);
  void leave(const char* name, uint64_t value);  // "< NAME VALUE"
  void line(const std::string& text) { lines_.push_back(text); }
  // A call handle_request makes whose return value it adds to its total.
  void call(const char* name, uint64_t arg, uint64_t result);

  void validate();                                   // > handle_request *, then validate
  void price(const char* compute, const char* fee);  // compute(asset, amount) calls fee(price, bps)
  void settle();                                     // settle(depth) down to settle(0)
  void risky();                                      // for id % 5 == 3 only

  ExpectedRequest done();                                      // < handle_request TOTAL
  ExpectedRequest cut(std::vector<std::string> open) const;  // ends here, frames left open

 private:
  uint64_t id_;
  uint64_t total_ = 0;
  std::vector<std::string> lines_;
};

struct TargetInfo {
  std::string name;            // "trace_target": the usage line and the WORK_DIR/NAME_* files
  std::vector<Traced> traced;  // in the order the target prints them
  std::string kinds;           // the event kinds its record may hold, e.g. "><!~"
  bool counts_cut = false;     // the record summary counts requests cut by exit
  // handle_request's &Request must be a nonzero multiple of this.
  uint64_t request_alignment = 1;
  // stderr goes to WORK_DIR/NAME_LABEL.stderr, and a clean exit leaves it empty.
  bool silent_stderr = false;
  // Target-specific checks of each request, after the model's.
  std::function<void(const Block& block, const std::string& where)> check_request;
};

// --- running the target ------------------------------------------------------

// Prints "$ TARGET ARGS..." (also into *command), then starts it with stdout
// on STDOUT_FD and stderr on STDERR_FD (-1: inherited); returns its pid.
pid_t spawn_target(const std::string& target, const std::vector<std::string>& args, int stdout_fd, int stderr_fd,
                   std::string* command = nullptr);

struct Run {
  pid_t pid = -1;
  std::vector<std::string> startup;  // stdout lines before "ready"
  std::string after_ready;           // anything printed after "ready"
  std::string stderr_text;           // everything printed on stderr, when captured
  int status = -1;                   // waitpid status
  milliseconds ready_to_exit{0};
};

// Which requests a record must hold.
struct Expectation {
  unsigned threads = 2;
  std::optional<uint64_t> requests;  // exact count per thread, if known
  bool equal_counts = false;         // every thread ran the same number of requests
};

struct Summary {
  size_t requests = 0, unwinding = 0, tail = 0, cut = 0, events = 0;
  std::map<uint64_t, uint64_t> per_worker;
};

// One target binary in one WORK_DIR.
class Checker {
 public:
  Checker(const TargetInfo& info, std::string binary, std::string work_dir)
      : info_(info), binary_(std::move(binary)), work_dir_(std::move(work_dir)) {}

  const TargetInfo& info() const { return info_; }
  const std::string& binary() const { return binary_; }
  const std::string& work_dir() const { return work_dir_; }

  // WORK_DIR/NAME_LABEL.record, removed.
  std::string fresh_record(const std::string& label) const;

  // Starts the target with ARGS (stderr captured under LABEL if the target
  // must keep it silent), reads stdout, optionally sends SIGTERM `term_after`
  // after "ready", and waits for the exit; fails if it takes over `limit`.
  Run run(const std::string& label, const std::vector<std::string>& args,
          std::optional<milliseconds> term_after = std::nullopt, milliseconds limit = milliseconds(20000)) const;

  // Exit status 0 (and nothing on stderr, where it is captured).
  void require_clean_exit(const Run& run) const;

  // "func NAME 0xADDR" for every traced function in order, then "pid N";
  // returns the addresses by name.
  std::map<std::string, uint64_t> check_startup(const Run& run) const;

  // The live addresses are the static ones (by name) plus one page-aligned
  // load bias.
  void check_load_bias(const std::map<std::string, uint64_t>& addresses,
                       const std::map<std::string, uint64_t>& static_addresses) const;

  std::vector<Event> read_record(const std::string& path) const;

  // Every request of every worker, in order, exactly as the model says.
  Summary check_record(const std::string& path, const Run& run, const Expectation& expect,
                       const RequestModel& model) const;

  // --- modes, or their common part ---

  // 2 workers x 20 requests: startup lines, the load bias against the static
  // addresses (by name) that `static_addresses` looks up, the record.
  Summary record_mode(const std::function<std::map<std::string, uint64_t>()>& static_addresses,
                      const RequestModel& model) const;

  // SIGTERM 300 ms after ready while 2 workers run requests every 2 ms:
  // a clean exit and a record in which both workers ran requests.
  Summary sigterm_mode(const std::string& label, const std::vector<std::string>& extra_args, const Expectation& expect,
                       const RequestModel& model) const;

  // --first-delay-ms 400 before the first of REQUESTS (run with
  // REQUEST_ARGS) in one worker, then SIGTERM during a 60 s delay.
  void first_delay_mode(const std::vector<std::string>& request_args, uint64_t requests,
                        const RequestModel& model) const;

  // Each argument list makes the target exit with status 2.
  void bad_args_mode(const std::vector<std::vector<std::string>>& bad) const;

 private:
  TargetInfo info_;
  std::string binary_;
  std::string work_dir_;
};

// Model-free shape check: frames nest, each is left exactly once (by <, ! or
// ~), a ~ is immediately followed by the tail callee's entry, and ! lines
// come in a run from the innermost frame outwards. Returns the frames left
// open at the end.
std::vector<std::string> check_nesting(const Block& block);

// main() of NAME_check MODE TARGET WORK_DIR: runs MODE, prints "ok: MODE"
// and returns 0 when every check passed, 1 when one failed, 2 on bad usage.
using Mode = std::function<void(const Checker&)>;
int checker_main(int argc, char** argv, const TargetInfo& info,
                 const std::vector<std::pair<std::string, Mode>>& modes);

}  // namespace target_check
