#include "serve/helper_advice.h"

#include <limits.h>
#include <unistd.h>

#include <string>

namespace xref::serve {
namespace {

// This helper's own path, as `xref helper` must name it.
std::string own_path() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, static_cast<size_t>(length)) : std::string("/path/to/xref");
}

}  // namespace

Error with_helper_advice(Error error) {
  // Every refusal that root would lift says so in its hint ("run xref as
  // root ..."); the others (a file the user may not read) stay as they are.
  if (error.code != ErrorCode::permission_denied || geteuid() == 0 ||
      error.hint.find("as root") == std::string::npos) {
    return error;
  }
  error.hint = "the helper runs as uid " + std::to_string(geteuid()) + ", not root: start it through sudo with `xref helper sudo -n " +
               own_path() + " serve` (docs/lldb.md, docs/gdb.md: \"The helper and privileges\")";
  return error;
}

}  // namespace xref::serve
