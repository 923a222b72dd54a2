#include "watch/process_memory.h"

#include <dirent.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "hex.h"

namespace xref {

Result<std::vector<uint8_t>> read_target_bytes(pid_t pid, uint64_t address, uint64_t length) {
  std::vector<uint8_t> bytes(length);
  if (length == 0) return bytes;
  iovec local{bytes.data(), length};
  iovec remote{reinterpret_cast<void*>(address), length};
  const ssize_t read = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (read < 0 || static_cast<uint64_t>(read) != length) {
    const int error = read < 0 ? errno : EFAULT;
    return make_error(error == ESRCH ? ErrorCode::process_exited : ErrorCode::address_unmapped,
                      "reading " + std::to_string(length) + " bytes at " + to_hex(address) + " of process " +
                          std::to_string(pid) + ": " + std::strerror(error));
  }
  return bytes;
}

std::vector<uint64_t> thread_stack_pointers(pid_t pid) {
  std::vector<uint64_t> pointers;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* directory = opendir(tasks.c_str());
  if (directory == nullptr) return pointers;
  while (dirent* entry = readdir(directory)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(tasks + "/" + entry->d_name + "/syscall");
    std::string line;
    if (!std::getline(file, line)) continue;
    // "NR ARG1 .. ARG6 SP PC" while in a system call; "running" else.
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.size() < 3) continue;
    const std::string& sp = fields[fields.size() - 2];
    if (sp.rfind("0x", 0) != 0) continue;
    pointers.push_back(std::stoull(sp, nullptr, 16));
  }
  closedir(directory);
  return pointers;
}

}  // namespace xref
