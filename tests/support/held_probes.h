// The probes one helper holds in a target's executable, as the kernel lists
// them in the helper's /proc/PID/fdinfo (the code bytes at those places:
// probed_code.h):
// what tests read to prove that probes are in, and that nothing is left.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"
#include "probed_code.h"

namespace xref::test {

// The probes one helper holds in one target, as the kernel lists them in
// the helper's /proc/PID/fdinfo: uprobe_multi link ids and file offsets.
struct HeldProbes {
  std::vector<uint64_t> link_ids;
  std::vector<uint64_t> offsets;
  std::string path;
};

inline HeldProbes held_probes(pid_t helper, pid_t target) {
  HeldProbes held;
  std::error_code ignored;
  const std::string executable =
      std::filesystem::read_symlink("/proc/" + std::to_string(target) + "/exe", ignored).string();
  const std::string fd_dir = "/proc/" + std::to_string(helper) + "/fdinfo";
  for (const auto& entry : std::filesystem::directory_iterator(fd_dir)) {
    std::ifstream info(entry.path());
    std::string line, type, path;
    uint64_t link_id = 0;
    pid_t pid = 0;
    std::vector<uint64_t> offsets;
    bool table = false;
    while (std::getline(info, line)) {
      std::istringstream fields(line);
      std::string key;
      fields >> key;
      if (key == "link_type:") fields >> type;
      else if (key == "link_id:") fields >> link_id;
      else if (key == "pid:") fields >> pid;
      else if (key == "path:") fields >> path;
      else if (key == "cookie") table = true;
      else if (table) {
        std::string offset;
        if (fields >> offset) offsets.push_back(std::stoull(offset, nullptr, 16));
      }
    }
    // The target's executable only: probes in a shared library (the unwind
    // checks in libstdc++) share their file with every process, and other
    // tracers' system-wide uprobes there are none of this helper's doing.
    if (type != "uprobe_multi" || pid != target || path != executable) continue;
    held.link_ids.push_back(link_id);
    held.offsets.insert(held.offsets.end(), offsets.begin(), offsets.end());
    held.path = path;
  }
  return held;
}

// The byte at each probed place, from the target's memory and from the file.
inline CodeBytes code_bytes(pid_t target, const HeldProbes& held) {
  return code_bytes(target, held.path, held.offsets);
}

// BPF links of any kind the helper holds (fdinfo's link_type), in any target.
inline int held_links(pid_t helper) {
  int count = 0;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(helper) + "/fdinfo", ignored)) {
    std::ifstream info(entry.path());
    std::string line;
    while (std::getline(info, line)) {
      if (line.rfind("link_type:", 0) == 0) {
        ++count;
        break;
      }
    }
  }
  return count;
}

}  // namespace xref::test
