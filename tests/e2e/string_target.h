// string_target (tests/targets/string_target.c), the ground truth of the
// :string tests of probe and trace: the keys it passed and how often, as
// its record says, and what xref's JSON shows of a key.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe_harness.h"
#include "tracefs_state.h"

namespace xref::test {

// The record: key bytes -> times passed ("HEX COUNT" lines, "-" the empty key).
inline std::map<std::string, uint64_t> read_string_target_keys(const std::string& path) {
  std::map<std::string, uint64_t> keys;
  std::ifstream in(path);
  std::string hex;
  uint64_t count = 0;
  while (in >> hex >> count) {
    std::string key;
    for (size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2) {
      key += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    keys[key] = count;
  }
  return keys;
}

// What xref's JSON shows of `key` fetched with `bound`: its first `bound`
// bytes, any byte that is not UTF-8 as U+FFFD (as every JSON of xref).
inline std::string shown(const std::string& key, size_t bound) {
  return nlohmann::json::parse(
             nlohmann::json(key.substr(0, bound)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

// One build of the target (gcc or clang, -O2) and the backend that reads it.
struct StringsCase {
  std::string compiler;
  std::string backend;
};

// Every build with every backend: the BPF program's and tracefs'.
inline std::vector<StringsCase> string_cases() {
  return {{"gcc", "auto"}, {"clang", "auto"}, {"gcc", "tracefs"}, {"clang", "tracefs"}};
}
inline std::string string_case_name(const ::testing::TestParamInfo<StringsCase>& instance) {
  return instance.param.compiler + "_" + instance.param.backend;
}

// A test on string_target: each run starts a fresh target, runs xref on it
// until it exits and reads its record.
class StringTargetTest : public ::testing::TestWithParam<StringsCase> {
 protected:
  // `rounds`: how often the target passes each key in a run.
  StringTargetTest(const std::string& command, int rounds)
      : rounds_(rounds), record_(command + "-strings-" + GetParam().compiler + "-" + GetParam().backend) {}

  void SetUp() override {
    if (GetParam().backend == "tracefs") {
      XREF_REQUIRE(tracefs_usable(), "root and tracefs");
    } else {
      XREF_REQUIRE(bpf_usable(), "root for BPF");
    }
  }

  // `xref COMMAND --pid P ARGS...` on a fresh target; it must end with the
  // target's exit.
  XrefRun run_on_target(const std::string& command, const std::vector<std::string>& args) {
    // A run of its own: the last run's go file would start the target unobserved.
    target_.reset();
    unlink(record_.path.c_str());
    unlink(record_.go_file().c_str());
    target_ = std::make_unique<TargetProcess>(std::vector<std::string>{
        binary(), "--record", record_.path, "--go-file", record_.go_file(), "--rounds", std::to_string(rounds_)});
    std::vector<std::string> all = {command, "--pid", std::to_string(target_->pid())};
    all.insert(all.end(), args.begin(), args.end());
    XrefRun run = run_xref_attached(all, record_.go_file());
    EXPECT_EQ(run.exit_status, kProcessExited) << run.err << run.out.substr(0, 4000);
    keys_ = read_string_target_keys(record_.path);
    EXPECT_EQ(keys_.size(), 10u) << "the record has every distinct key";
    return run;
  }

  // The run's JSON document; a failure (and null) when it has none.
  static nlohmann::json json_of(const XrefRun& run) {
    try {
      return run.json();
    } catch (const std::exception&) {
      ADD_FAILURE() << run.out << run.err;
      return {};
    }
  }

  std::string binary() const { return std::string(XREF_TARGETS_DIR) + "/string_target-" + GetParam().compiler; }
  // The calls whose key `keep` accepts, as the record counts them.
  uint64_t passed_where(const std::function<bool(const std::string&)>& keep) const {
    uint64_t total = 0;
    for (const auto& [key, count] : keys_) total += keep(key) ? count : 0;
    return total;
  }

  const int rounds_;
  RecordFile record_;
  std::unique_ptr<TargetProcess> target_;
  std::map<std::string, uint64_t> keys_;
};

}  // namespace xref::test
