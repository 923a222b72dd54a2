// .xprof documents (docs/xprof.md) built by hand in tests, over the real
// functions of a real ELF file: the reports' input without a capture, so
// every expected number is known. Functions come from `nm -S`, the
// build-id from `readelf -n`: the ground truth the reports must agree with.
#pragma once

#include <cstdint>
#include <cstdio>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

inline std::string xprof_hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// A function as nm -S prints it.
struct NmFunction {
  uint64_t start = 0;
  uint64_t size = 0;
};

inline std::map<std::string, NmFunction> nm_sized_functions(const std::string& path) {
  std::map<std::string, NmFunction> functions;
  for (const std::string& line : command_lines("nm -S --defined-only " + path)) {
    std::istringstream words(line);
    std::string start, size, type, name;
    if (!(words >> start >> size >> type >> name) || (type != "T" && type != "t")) continue;
    functions[name] = {std::stoull(start, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return functions;
}

inline std::string readelf_build_id(const std::string& path) {
  for (const std::string& line : command_lines("readelf -n " + path)) {
    const size_t at = line.find("Build ID: ");
    if (at != std::string::npos) return line.substr(at + 10);
  }
  return "";
}

// "file.c:12" as addr2line prints the line of `address` (its basename).
inline std::string addr2line_text(const std::string& path, uint64_t address) {
  std::string line = command_output("addr2line -e " + path + " " + xprof_hex(address));
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  const size_t discriminator = line.find(" (discriminator");
  if (discriminator != std::string::npos) line.resize(discriminator);
  const size_t slash = line.rfind('/');
  return slash == std::string::npos ? line : line.substr(slash + 1);
}

class XprofDocument {
 public:
  XprofDocument() {
    document_ = {
        {"format", "xprof"},
        {"schema_version", 1},
        {"tool", "xref"},
        {"tool_version", "test"},
        {"process", {{"pid", 4242}, {"comm", "sample_service"}, {"exe_path", ""}, {"build_id", ""}}},
        {"capture",
         {{"event", "cpu-clock"},
          {"event_reason", "default: no hardware PMU"},
          {"frequency_hz", 99},
          {"period_ns", 10101010},
          {"callers", "dwarf"},
          {"max_frames", 128},
          {"started_unix_ns", 1},
          {"duration_ns", 1000000000},
          {"threads_requested", nlohmann::json::array()},
          {"ended_by", "duration"}}},
        {"modules", nlohmann::json::array()},
        {"functions", nlohmann::json::array()},
        {"locations", nlohmann::json::array()},
        {"stacks", nlohmann::json::array()},
        {"samples", nlohmann::json::array()},
        {"threads", nlohmann::json::array()},
        {"losses",
         {{"throttled", 0}, {"stacks_full", 0}, {"counts_full", 0}, {"requests_lost", 0}, {"other_process", 0}}},
        {"stack_ends", nlohmann::json::object()},
        {"frames_walked", 0},
        {"complete", true},
        {"warnings", nlohmann::json::array()},
    };
  }

  XprofDocument(const XprofDocument&) = delete;
  XprofDocument& operator=(const XprofDocument&) = delete;
  XprofDocument(XprofDocument&&) = default;

  nlohmann::json& json() { return document_; }
  std::string text() const { return document_.dump(); }

  // The executable when `executable` (process.exe_path and build_id follow it).
  uint32_t module(const std::string& path, const std::string& build_id, bool executable = false) {
    document_["modules"].push_back({{"path", path},
                                    {"build_id", build_id},
                                    {"load_bias", "0x555555554000"},
                                    {"mappings", nlohmann::json::array()},
                                    {"unwind_table", "loaded"},
                                    {"unwind_rows", 10},
                                    {"unwind_error", nullptr}});
    if (executable) {
      document_["process"]["exe_path"] = path;
      document_["process"]["build_id"] = build_id;
    }
    return static_cast<uint32_t>(document_["modules"].size() - 1);
  }

  uint32_t function(uint32_t module, const std::string& name, uint64_t start, uint64_t size) {
    document_["functions"].push_back(
        {{"module", module}, {"name", name}, {"raw_name", name}, {"start", xprof_hex(start)}, {"size", size}});
    return static_cast<uint32_t>(document_["functions"].size() - 1);
  }

  // function -1: no symbol covers it.
  uint32_t location(uint32_t module, uint64_t address, bool return_address, int64_t function) {
    document_["locations"].push_back({{"module", module},
                                      {"address", xprof_hex(address)},
                                      {"return_address", return_address},
                                      {"function", function < 0 ? nlohmann::json() : nlohmann::json(function)}});
    return static_cast<uint32_t>(document_["locations"].size() - 1);
  }

  // Leaf first; `count` samples of thread `tid`.
  uint32_t stack(const std::vector<uint32_t>& locations, uint64_t count, const std::string& end = "complete",
                 bool in_kernel = false, uint32_t tid = 100) {
    document_["stacks"].push_back({{"locations", locations}, {"end", end}, {"in_kernel", in_kernel}});
    const auto index = static_cast<uint32_t>(document_["stacks"].size() - 1);
    document_["samples"].push_back({{"stack", index}, {"tid", tid}, {"count", count}});
    auto& ends = document_["stack_ends"];
    ends[end] = ends.value(end, uint64_t{0}) + count;
    if (end != "complete" && end != "leaf_only") document_["complete"] = false;
    bool found = false;
    for (auto& thread : document_["threads"]) {
      if (thread["tid"] == tid) {
        thread["samples"] = thread["samples"].get<uint64_t>() + count;
        found = true;
      }
    }
    if (!found) {
      document_["threads"].push_back({{"tid", tid},
                                      {"name", "worker"},
                                      {"samples", count},
                                      {"cpu_ns", count * 10101010},
                                      {"started_during_capture", false},
                                      {"exited_during_capture", false}});
    }
    return index;
  }

  // Written to a file that is removed with the document.
  std::string write(const std::string& name) {
    const std::string path = "/tmp/xref-xprof-" + name + "-" + std::to_string(getpid()) + ".xprof";
    std::ofstream(path) << text();
    written_.push_back(path);
    return path;
  }
  ~XprofDocument() {
    for (const std::string& path : written_) std::remove(path.c_str());
  }

 private:
  nlohmann::json document_;
  std::vector<std::string> written_;
};

}  // namespace xref::test
