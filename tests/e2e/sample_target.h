// The sample service started for a test, with nm's static VAs of its
// functions as the ground truth for address answers.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "target_process.h"

namespace xref::test {

inline std::map<std::string, uint64_t> nm_static_vas(const std::string& path) {
  std::map<std::string, uint64_t> vas;
  for (const auto& line : command_lines("nm --defined-only " + path)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) vas[name] = std::stoull(address, nullptr, 16);
  }
  return vas;
}

inline std::string hex(uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

// The sample service's command line, after `runner` (a command that runs
// it, e.g. setpriv to run it as another user; empty: run it directly).
inline std::vector<std::string> sample_service_command(std::vector<std::string> runner = {}) {
  runner.insert(runner.end(), {XREF_SAMPLE_SERVICE, "--threads", "2", "--requests", "0", "--interval-us", "2000"});
  return runner;
}

struct SampleTarget {
  SampleTarget() : SampleTarget(std::vector<std::string>{}) {}
  explicit SampleTarget(const std::vector<std::string>& runner) : process(sample_service_command(runner)) {}
  TargetProcess process;
  std::map<std::string, uint64_t> nm = nm_static_vas(XREF_SAMPLE_SERVICE);
  std::string pid() const { return std::to_string(process.pid()); }
};

}  // namespace xref::test
