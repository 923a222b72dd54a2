// What a watch leaves in the kernel and in its target, seen from outside
// the helper: the BPF links the helper's own descriptors hold (its
// /proc/PID/fdinfo), whether those link ids still exist (bpftool), the
// uprobe_events lines of its tracefs group, and the int3 bytes a uprobe
// writes into the target's code (the target's executable mappings against
// the file's bytes). Each looks only at this helper and this target, so
// other tests running at the same time cannot disturb it.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace_harness.h"

namespace xref::test {

struct HeldLink {
  uint64_t id = 0;
  std::string type;  // fdinfo's link_type: uprobe_multi, perf, ...
};

// The BPF links PID's descriptors hold (empty once the process is gone).
inline std::vector<HeldLink> links_held_by(pid_t pid) {
  std::vector<HeldLink> links;
  const std::string directory = "/proc/" + std::to_string(pid) + "/fdinfo";
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return links;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(directory + "/" + entry->d_name);
    std::string line, type;
    uint64_t id = 0;
    while (std::getline(file, line)) {
      if (line.rfind("link_type:", 0) == 0) type = line.substr(line.find_first_not_of(" \t", 10));
      if (line.rfind("link_id:", 0) == 0) id = std::stoull(line.substr(8));
    }
    if (id != 0) links.push_back({id, type});
  }
  closedir(dir);
  return links;
}

// Of `links`, those the kernel still has (bpftool link list).
inline std::vector<uint64_t> links_still_there(const std::vector<HeldLink>& links) {
  std::set<uint64_t> existing;
  for (const auto& link : nlohmann::json::parse(command_output("bpftool -j link list"))) {
    existing.insert(link["id"].get<uint64_t>());
  }
  std::vector<uint64_t> there;
  for (const HeldLink& link : links) {
    if (existing.count(link.id)) there.push_back(link.id);
  }
  return there;
}

// uprobe_events lines of the tracefs group a helper with this PID would own
// (attach/tracefs/owner.h: xref_<PID>_<start>).
inline std::vector<std::string> uprobe_events_of_helper(pid_t helper) {
  std::ifstream file("/sys/kernel/tracing/uprobe_events");
  std::vector<std::string> lines;
  std::string line;
  const std::string group = ":xref_" + std::to_string(helper) + "_";
  while (std::getline(file, line)) {
    if (line.find(group) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// Bytes of `binary`'s executable mappings in PID that differ from the file
// (a uprobe is an int3 written into the process's copy of the page).
inline size_t code_bytes_changed(pid_t pid, const std::string& binary) {
  char resolved[4096];
  if (realpath(binary.c_str(), resolved) == nullptr) return 0;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::ifstream file(resolved, std::ios::binary);
  const int memory = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (memory < 0) return 0;
  size_t changed = 0;
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream words(line);
    std::string span, perms, offset_hex, device, inode, path;
    words >> span >> perms >> offset_hex >> device >> inode >> path;
    if (path != resolved || perms.size() < 3 || perms[2] != 'x') continue;
    const uint64_t start = std::stoull(span.substr(0, span.find('-')), nullptr, 16);
    const uint64_t end = std::stoull(span.substr(span.find('-') + 1), nullptr, 16);
    std::vector<char> from_file(end - start), from_memory(end - start);
    file.clear();
    file.seekg(static_cast<std::streamoff>(std::stoull(offset_hex, nullptr, 16)));
    file.read(from_file.data(), static_cast<std::streamsize>(from_file.size()));
    from_file.resize(static_cast<size_t>(file.gcount()));
    const ssize_t got = pread(memory, from_memory.data(), from_file.size(), static_cast<off_t>(start));
    from_memory.resize(got > 0 ? static_cast<size_t>(got) : 0);
    for (size_t i = 0; i < from_memory.size(); ++i) changed += from_memory[i] != from_file[i];
  }
  close(memory);
  return changed;
}

}  // namespace xref::test
