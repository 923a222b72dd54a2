// What the capture tests of `xref profile` share: capture_spin started
// (tests/targets/capture_spin.c), a capture of it read back from its
// .xprof, each stack as the function names of its frames, and nm's
// addresses of the target's functions (the peer that says the capture
// named the right code).
#pragma once

#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command_output.h"
#include "watch_leftovers.h"
#include "require.h"
#include "run_xref.h"
#include "target_process.h"

namespace xref::test {

inline std::string capture_spin_binary(const std::string& build) {
  return std::string(XREF_TARGETS_DIR) + "/capture_spin-" + build;
}

inline std::string temporary_capture(const std::string& name) {
  return "/tmp/xref-profile-test-" + std::to_string(getpid()) + "-" + name + ".xprof";
}

inline nlohmann::json read_capture(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return nlohmann::json::parse(text.str());
}

struct NamedStack {
  std::vector<std::string> functions;  // leaf first; "?" where no symbol covers the frame
  std::vector<std::string> modules;    // each frame's module path ("" outside every module)
  std::string end;
  uint64_t count = 0;
  uint32_t tid = 0;
};

// Every (stack, thread) sample of a capture, named.
inline std::vector<NamedStack> named_stacks(const nlohmann::json& capture) {
  std::vector<NamedStack> named;
  const auto& functions = capture["functions"];
  const auto& locations = capture["locations"];
  const auto& modules = capture["modules"];
  for (const auto& sample : capture["samples"]) {
    const auto& stack = capture["stacks"][sample["stack"].get<size_t>()];
    NamedStack entry;
    entry.end = stack["end"];
    entry.count = sample["count"];
    entry.tid = sample["tid"];
    for (const auto& index : stack["locations"]) {
      const auto& location = locations[index.get<size_t>()];
      entry.functions.push_back(location["function"].is_null()
                                    ? "?"
                                    : functions[location["function"].get<size_t>()]["name"].get<std::string>());
      entry.modules.push_back(location["module"].is_null()
                                  ? ""
                                  : modules[location["module"].get<size_t>()]["path"].get<std::string>());
    }
    named.push_back(entry);
  }
  return named;
}

// nm's text symbols of `binary`: name -> static VA.
inline std::map<std::string, uint64_t> nm_functions(const std::string& binary) {
  std::map<std::string, uint64_t> symbols;
  std::istringstream lines(command_output("nm --defined-only " + shell_quote(binary)));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string address, type, name;
    if (!(words >> address >> type >> name)) continue;
    if (type == "T" || type == "t") symbols[name] = std::stoull(address, nullptr, 16);
  }
  return symbols;
}

// Does this host have `config` of the hardware PMU? (The test's own
// perf_event_open on itself: the peer of xref's refusal.)
inline bool host_has_hardware_event(uint64_t config, bool branch_stack = false) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.sample_freq = 99;
  attr.freq = 1;
  attr.disabled = 1;
  if (branch_stack) {
    attr.sample_type = PERF_SAMPLE_BRANCH_STACK;
    attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY_CALL;
  }
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

}  // namespace xref::test
