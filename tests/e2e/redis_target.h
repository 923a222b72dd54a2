// Debian's redis-server, started for a test as a user starts it: by its
// name /usr/bin/redis-server, a symlink to redis-check-rdb (one binary, two
// names), stripped, with only dynamic symbols. Ground truth comes from nm -D,
// objdump and the process's /proc/PID/maps.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command_output.h"
#include "objdump_listing.h"

namespace xref::test {

inline constexpr const char* kRedisServer = "/usr/bin/redis-server";

class RedisTarget {
 public:
  RedisTarget() {
    directory_ = ::testing::TempDir() + "xref-redis-XXXXXX";
    if (mkdtemp(directory_.data()) == nullptr) throw std::runtime_error("mkdtemp");
    socket_ = directory_ + "/redis.sock";
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = directory_ + "/log";
      freopen(log.c_str(), "w", stdout);
      execl(kRedisServer, kRedisServer, "--port", "0", "--unixsocket", socket_.c_str(), "--save", "", "--appendonly",
            "no", "--dir", directory_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    // Ready when it answers; each try waits for redis-cli's own connect.
    for (int attempt = 0; attempt < 600; ++attempt) {
      if (auto reply = try_command_lines("redis-cli -s " + socket_ + " ping 2>/dev/null");
          reply && !reply->empty() && reply->front() == "PONG") {
        return;
      }
      usleep(50 * 1000);
    }
    throw std::runtime_error("redis-server did not answer on " + socket_);
  }
  RedisTarget(const RedisTarget&) = delete;
  RedisTarget& operator=(const RedisTarget&) = delete;
  ~RedisTarget() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(directory_);
  }

  pid_t pid() const { return pid_; }
  std::string pid_text() const { return std::to_string(pid_); }
  // The file the symlink names: what /proc/PID/exe and the maps say.
  static std::string executable() { return std::filesystem::canonical(kRedisServer).string(); }

  // `count` SET commands, answered before this returns.
  void sets(int count) const {
    std::string commands;
    for (int i = 0; i < count; ++i) commands += "SET key" + std::to_string(i) + " value\n";
    const std::string file = directory_ + "/commands";
    std::ofstream(file) << commands;
    command_output("redis-cli -s " + socket_ + " < " + file + " > /dev/null");
  }

  // A field of INFO stats (total_commands_processed, ...): redis's own count.
  uint64_t info_stat(const std::string& field) const {
    for (const std::string& line : command_lines("redis-cli -s " + socket_ + " info stats")) {
      if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
    }
    throw std::runtime_error("INFO stats has no " + field);
  }

  // The static VA of an exported function, as nm -D prints it.
  static uint64_t nm_dynamic(const std::string& name) {
    for (const std::string& line : command_lines("nm -D --defined-only " + executable())) {
      std::istringstream fields(line);
      std::string address, type, symbol;
      if (fields >> address >> type >> symbol && symbol == name) return std::stoull(address, nullptr, 16);
    }
    throw std::runtime_error("nm -D has no " + name);
  }

  // The instruction starts of a function, from objdump.
  static std::vector<uint64_t> instructions(const std::string& name) {
    const uint64_t start = nm_dynamic(name);
    std::vector<uint64_t> starts;
    for (const auto& line : command_lines("objdump -d --no-show-raw-insn --start-address=" + std::to_string(start) +
                                          " --stop-address=" + std::to_string(start + 64) + " " + executable())) {
      const size_t colon = line.find(":\t");
      if (!line.empty() && line[0] == ' ' && colon != std::string::npos) {
        starts.push_back(std::stoull(line.substr(0, colon), nullptr, 16));
      }
    }
    return starts;
  }

  // The live address of a static VA of the executable, from /proc/PID/maps:
  // the start of its mapping at file offset 0 (a PIE's first PT_LOAD is at
  // VA 0, file offset 0) plus the VA.
  uint64_t live(uint64_t static_va) const {
    const std::string path = executable();
    for (const std::string& line : command_lines("cat /proc/" + pid_text() + "/maps")) {
      std::istringstream fields(line);
      std::string range, perms, offset, device, inode, file;
      if (fields >> range >> perms >> offset >> device >> inode >> file && file == path &&
          std::stoull(offset, nullptr, 16) == 0) {
        return std::stoull(range.substr(0, range.find('-')), nullptr, 16) + static_va;
      }
    }
    throw std::runtime_error("no mapping of " + path + " at offset 0 in /proc/" + pid_text() + "/maps");
  }

 private:
  std::string directory_;
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace xref::test
