#include "render/process_name.h"

namespace xref::render {

namespace {
constexpr size_t kCommBytes = 15;  // TASK_COMM_LEN less its NUL
}

std::string process_name(const std::string& comm, const std::string& exe_path) {
  if (comm.size() != kCommBytes) return comm;
  const std::string file = exe_path.substr(exe_path.rfind('/') + 1);
  // " (deleted)": the file was replaced while the process ran; its comm says enough.
  if (file.size() > comm.size() && file.compare(0, comm.size(), comm) == 0 && file.find(' ') == std::string::npos) {
    return file;
  }
  return comm;
}

}  // namespace xref::render
