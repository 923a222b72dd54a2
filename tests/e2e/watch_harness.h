// xref watch against watch_target (tests/targets/watch_target.c): the
// target starts and waits for its go file, `xref watch` attaches in the
// background, the go file is written once xref says it is watching, the
// target runs its rounds and exits, and the watch ends with it. The
// target's record is the ground truth the watch's writes must equal.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "require.h"
#include "trace_harness.h"
#include "run_xref.h"
#include "watch_target_record.h"

namespace xref::test {

namespace wt = watch_target;

inline std::string temp_path(const std::string& stem) {
  char path[] = "/tmp/xref-watch-XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  unlink(path);
  return std::string(path) + "-" + stem;
}

inline std::string watch_target_binary(const std::string& build) {
  return std::string(XREF_TARGETS_DIR) + "/" + build;
}

// A running watch_target, stopped before its first write (--go).
class WatchTarget {
 public:
  WatchTarget(const std::string& build, std::vector<std::string> args)
      : go_(temp_path("go")), record_path_(temp_path("record")) {
    std::vector<std::string> argv = {watch_target_binary(build), "--go", go_, "--record", record_path_};
    argv.insert(argv.end(), args.begin(), args.end());
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      std::vector<char*> raw;
      for (auto& arg : argv) raw.push_back(arg.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
    std::vector<std::string> lines;
    std::string line;
    while (read_line(line) && line != "ready") lines.push_back(line);
    if (line != "ready") throw std::runtime_error("watch_target ended before ready");
    startup_ = wt::parse_startup(lines);
  }
  ~WatchTarget() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) fclose(out_);
    unlink(go_.c_str());
    unlink(record_path_.c_str());
  }

  const wt::Startup& startup() const { return startup_; }
  pid_t pid() const { return pid_; }
  std::string address(const std::string& object) const { return hex_string(startup_.object(object).address); }
  void go() const { std::ofstream(go_) << "go\n"; }

  // Reads the exit lines and waits for the exit; the status.
  int finish() {
    std::vector<std::string> lines;
    std::string line;
    while (read_line(line)) lines.push_back(line);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    exit_ = wt::parse_exit(lines);
    return status;
  }
  const wt::Exit& exit_lines() const { return exit_; }
  std::vector<wt::Write> record() const { return wt::read_record(record_path_); }

 private:
  bool read_line(std::string& line) {
    char* buffer = nullptr;
    size_t size = 0;
    const ssize_t length = getline(&buffer, &size, out_);
    if (length <= 0) {
      free(buffer);
      return false;
    }
    line.assign(buffer, static_cast<size_t>(length));
    free(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return true;
  }

  std::string go_, record_path_;
  pid_t pid_ = 0;
  FILE* out_ = nullptr;
  wt::Startup startup_;
  wt::Exit exit_;
};

// `xref watch` in the background: started, then waited for.
class BackgroundXref {
 public:
  explicit BackgroundXref(const std::vector<std::string>& args)
      : out_path_(temp_path("out")), err_path_(temp_path("err")) {
    pid_ = fork();
    if (pid_ == 0) {
      const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      std::vector<std::string> argv = {XREF_BINARY};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (auto& arg : argv) raw.push_back(arg.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      _exit(127);
    }
  }
  ~BackgroundXref() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(out_path_.c_str());
    unlink(err_path_.c_str());
  }

  // Until xref says it watches (true) or exits first (false).
  bool wait_attached() {
    while (true) {
      if (read_file(err_path_).find("xref: watching PID") != std::string::npos) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        pid_ = 0;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  pid_t pid() const { return pid_; }

  XrefRun finish() {
    if (pid_ > 0) {
      waitpid(pid_, &status_, 0);
      pid_ = 0;
    }
    XrefRun run;
    run.exit_status = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    run.out = read_file(out_path_);
    run.err = read_file(err_path_);
    return run;
  }

  static std::string read_file(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = 0;
  int status_ = 0;
};

// One write as both sides can say it: per thread, in order.
struct SeenWrite {
  std::string object;
  uint64_t offset = 0;
  std::string old_hex, new_hex;
  std::string function;
  bool operator==(const SeenWrite& other) const {
    return object == other.object && offset == other.offset && old_hex == other.old_hex && new_hex == other.new_hex &&
           function == other.function;
  }
};

inline std::ostream& operator<<(std::ostream& out, const SeenWrite& write) {
  return out << write.object << "+" << write.offset << " " << write.old_hex << " -> " << write.new_hex << " by "
             << write.function;
}

using ThreadWrites = std::map<long, std::vector<SeenWrite>>;

// The target's record of the objects in `objects`, per thread (kernel
// writes left out: a watch reports them as unobserved changes).
inline ThreadWrites recorded_writes(const std::vector<wt::Write>& record, const std::vector<std::string>& objects) {
  ThreadWrites writes;
  for (const wt::Write& write : record) {
    if (write.by_kernel()) continue;
    if (std::find(objects.begin(), objects.end(), write.object) == objects.end()) continue;
    writes[write.tid].push_back(
        {write.object, write.offset, wt::hex_of(write.old_bytes), wt::hex_of(write.new_bytes), write.function});
  }
  return writes;
}

// The functions of an unstripped twin, by nm: a stripped build's writers
// (named fde_<hex> by the watch) get their source names from the same code.
class TwinNames {
 public:
  explicit TwinNames(const std::string& binary) {
    FILE* pipe = popen(("nm -S --defined-only " + binary).c_str(), "r");
    char line[1024];
    while (pipe && fgets(line, sizeof line, pipe)) {
      char type = 0;
      unsigned long long start = 0, size = 0;
      char name[512];
      if (sscanf(line, "%llx %llx %c %511s", &start, &size, &type, name) == 4 && (type == 'T' || type == 't')) {
        functions_.push_back({start, size, name});
      }
    }
    if (pipe) pclose(pipe);
  }
  std::string name_of(uint64_t static_va) const {
    for (const auto& function : functions_) {
      if (static_va >= function.start && static_va < function.start + function.size) return function.name;
    }
    return "?";
  }

 private:
  struct Function {
    uint64_t start, size;
    std::string name;
  };
  std::vector<Function> functions_;
};

inline uint64_t hex_field(const nlohmann::json& value) { return std::stoull(value.get<std::string>(), nullptr, 16); }

// The watch's writes per thread, in sequence order; `names`: range index ->
// object; `twin`: names a stripped build's writers.
inline ThreadWrites watched_writes(const nlohmann::json& document, const std::vector<std::string>& names,
                                   const TwinNames* twin = nullptr, const std::vector<uint64_t>& bases = {}) {
  std::vector<nlohmann::json> writes(document["result"]["writes"].begin(), document["result"]["writes"].end());
  std::stable_sort(writes.begin(), writes.end(),
                   [](const nlohmann::json& a, const nlohmann::json& b) { return a["seq"] < b["seq"]; });
  ThreadWrites out;
  for (const nlohmann::json& write : writes) {
    const nlohmann::json& writer = write["writer"];
    std::string function = writer.is_null() ? "?" : writer["function"].get<std::string>();
    if (!writer.is_null() && writer["by_contract"].get<bool>() && !writer["caller"].is_null()) {
      function = twin ? twin->name_of(hex_field(writer["caller"]["call_site_va"]))
                      : writer["caller"]["function"].get<std::string>();
    } else if (!writer.is_null() && twin) {
      function = twin->name_of(hex_field(writer["static_va"]));
    }
    const size_t range = write["range"].get<size_t>();
    const uint64_t base = range < bases.size() ? bases[range] : 0;
    out[write["tid"].get<long>()].push_back({names.at(range), base + write["offset"].get<uint64_t>(),
                                             write["old_bytes"].get<std::string>(),
                                             write["new_bytes"].get<std::string>(), function});
  }
  return out;
}

// The writes on both sides near index `at`, for a failure's message.
inline std::string around(const std::vector<SeenWrite>& recorded, const std::vector<SeenWrite>& seen, size_t at) {
  std::ostringstream out;
  const size_t from = at < 3 ? 0 : at - 3;
  for (size_t i = from; i < at + 4; ++i) {
    out << "\n  " << i + 1 << ": recorded ";
    if (i < recorded.size()) out << recorded[i]; else out << "-";
    out << " | watched ";
    if (i < seen.size()) out << seen[i]; else out << "-";
  }
  return out.str();
}

// The watch's writes equal the record's, per thread, in order; every
// thread the record lists is there, and no other.
inline void expect_writes_equal(const ThreadWrites& recorded, const ThreadWrites& watched) {
  size_t total = 0;
  for (const auto& [tid, writes] : recorded) total += writes.size();
  ASSERT_GT(total, 0u) << "the target recorded no write of the watched objects";
  for (const auto& [tid, writes] : recorded) {
    SCOPED_TRACE("thread " + std::to_string(tid));
    const auto found = watched.find(tid);
    ASSERT_NE(found, watched.end()) << "the watch saw no write of thread " << tid;
    const std::vector<SeenWrite>& seen = found->second;
    for (size_t i = 0; i < std::max(writes.size(), seen.size()); ++i) {
      ASSERT_LT(i, seen.size()) << "the watch missed write " << i + 1 << ": " << writes[i];
      ASSERT_LT(i, writes.size()) << "the watch saw a write the target did not record: " << seen[i];
      ASSERT_EQ(writes[i], seen[i]) << "write " << i + 1 << " of the thread" << around(writes, seen, i);
    }
  }
  for (const auto& [tid, writes] : watched) {
    EXPECT_TRUE(recorded.count(tid)) << "the watch saw " << writes.size() << " writes of thread " << tid
                                     << ", which recorded none; first: " << writes.front();
  }
}

// Runs `xref watch --pid P ARGS --json` on a fresh target until it exits.
struct WatchedRun {
  XrefRun xref;
  nlohmann::json document;
  std::vector<wt::Write> record;
  int target_status = 0;
};

inline WatchedRun watch_until_exit(WatchTarget& target, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"watch", "--pid", std::to_string(target.pid()), "--json", "--duration-ms", "0",
                                   "--max-events", "0"};
  full.insert(full.end(), args.begin(), args.end());
  BackgroundXref xref(full);
  WatchedRun run;
  if (!xref.wait_attached()) {
    run.xref = xref.finish();
    return run;
  }
  target.go();
  run.target_status = target.finish();
  run.xref = xref.finish();
  run.record = target.record();
  if (!run.xref.out.empty()) run.document = nlohmann::json::parse(run.xref.out);
  return run;
}

}  // namespace xref::test
