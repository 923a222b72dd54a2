// The sample service started for a test, with nm's static VAs of its
// functions as the ground truth for address answers.
#pragma once

#include <map>
#include <sstream>
#include <string>

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

struct SampleTarget {
  TargetProcess process{{XREF_SAMPLE_SERVICE, "--threads", "2", "--requests", "0", "--interval-us", "2000"}};
  std::map<std::string, uint64_t> nm = nm_static_vas(XREF_SAMPLE_SERVICE);
  std::string pid() const { return std::to_string(process.pid()); }
};

}  // namespace xref::test
