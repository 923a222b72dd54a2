#include "attach/libbpf_log.h"

#include <unistd.h>

#include <cerrno>

#include <bpf/libbpf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xref {
namespace {

int print_when_debugging(enum libbpf_print_level level, const char* format, va_list args) {
  const char* debug = std::getenv("XREF_DEBUG_BPF");
  if (debug == nullptr || std::strcmp(debug, "1") != 0) return 0;
  if (level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

}  // namespace

void configure_libbpf_logging() { libbpf_set_print(print_when_debugging); }

std::string libbpf_message(int error) {
  char text[256];
  libbpf_strerror(error, text, sizeof text);
  return text;
}

Error bpf_load_error(int error, const std::string& program) {
  // As root, EACCES is the verifier refusing the program, not a privilege problem.
  if (error == -EACCES && geteuid() == 0) {
    return make_error(ErrorCode::internal, "the kernel's verifier rejected " + program,
                      "rerun with XREF_DEBUG_BPF=1 for the verifier log and report it");
  }
  const ErrorCode code = (error == -EPERM || error == -EACCES) ? ErrorCode::permission_denied : ErrorCode::unsupported;
  return make_error(code, "loading " + program + " failed: " + libbpf_message(error),
                    code == ErrorCode::permission_denied ? "run xref as root (CAP_BPF and CAP_PERFMON)"
                                                         : "run `xref doctor` to see what this kernel supports");
}

}  // namespace xref
