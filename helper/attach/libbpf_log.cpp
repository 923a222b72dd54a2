#include "attach/libbpf_log.h"

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

}  // namespace xref
