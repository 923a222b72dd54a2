// names_target: the ground truth for naming functions (defects 6 and 8 of
// issue 12). Built by g++ -O2 like a release binary; its C++ functions are
// real C++ symbols (a lambda, std::function, templates, overloads, nested
// names), and it calls GNU IFUNC functions of libc.
//
// Each round n (0, 1, ...), on the main thread:
//   measure(n): strlen on 1 + n % 4 strings, memset on 1 + n % 3 buffers,
//               and with --call-lazy, wcsrchr and strstr once each
//   lam_f(n):   a std::function holding a lambda, called once through
//               apply (std::_Function_handler<...>::_M_invoke), then
//               names::twice<int>, names::twice<double>, inner::lam_f,
//               ovl(int), ovl(double), helper_add (libnames_helper.so.1)
//               and getpid, once each
//
// Startup lines on stdout: "func strlen 0xLIVE" and "func memset 0xLIVE"
// (the addresses the process resolved them to: the implementations its GOT
// holds), "pid N", "ready".
//
// --record PATH (O_APPEND): after each round, one line
//   "ROUND strlen=K memset=M wcsrchr=W strstr=S tree=N"
// with the calls measure(ROUND) made, and N = ROUND % 4, the helper_tree(N) call
// of that round (libnames_helper). --go-file PATH: wait for PATH before
// round 0. --requests N (default 1000), --interval-us U (default 2000).
// Wide-character and strstr imports stay unbound (lazy binding) unless
// --call-lazy calls them.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <functional>
#include <string>

extern "C" int helper_add(int a, int b);
extern "C" int helper_tree(int n);

namespace {
char g_words[4][32] = {"alpha", "beta-gamma", "delta epsilon", "zeta"};
char g_buffers[3][4096];
// Opaque, so memset stays a call (with a size the compiler can bound, g++
// -O2 expands it inline).
volatile size_t g_fill = 16;
wchar_t g_wide[] = L"a/b/c";
bool g_call_lazy = false;
}  // namespace

namespace names {
template <typename T>
__attribute__((noipa)) T twice(T value) {
  return value + value;
}
}  // namespace names

namespace inner {
__attribute__((noipa)) int lam_f(int x) { return x * 3; }
}  // namespace inner

__attribute__((noipa)) int ovl(int x) { return x + 1; }
__attribute__((noipa)) double ovl(double x) { return x + 0.5; }

// Opaque to the optimizer, so the call goes through std::function's invoker.
__attribute__((noipa)) int apply(const std::function<int(int)>& function, int value) { return function(value); }

__attribute__((noipa)) int lam_f(int x) {
  const std::function<int(int)> call = [x](int y) __attribute__((noipa)) { return x * y + 1; };
  int sum = apply(call, x);
  sum += names::twice<int>(x);
  sum += static_cast<int>(names::twice<double>(x));
  sum += inner::lam_f(x);
  sum += ovl(x) + static_cast<int>(ovl(static_cast<double>(x)));
  sum += helper_add(x, 2);
  sum += static_cast<int>(getpid() & 1);
  return sum;
}

struct Calls {
  uint64_t strlen_calls = 0, memset_calls = 0, wcsrchr_calls = 0, strstr_calls = 0;
};

__attribute__((noipa)) uint64_t measure(uint64_t round, Calls* calls) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < 1 + round % 4; ++i) {
    total += std::strlen(g_words[i]);
    ++calls->strlen_calls;
  }
  for (uint64_t i = 0; i < 1 + round % 3; ++i) {
    std::memset(g_buffers[i], static_cast<int>(round & 0x7f), g_fill + i * 8 + round % 16);
    ++calls->memset_calls;
  }
  if (g_call_lazy) {
    total += std::wcsrchr(g_wide, L'/') != nullptr;
    ++calls->wcsrchr_calls;
    total += std::strstr(g_words[2], "eps") != nullptr;
    ++calls->strstr_calls;
  }
  return total;
}

int main(int argc, char** argv) {
  const char* record = nullptr;
  const char* go_file = nullptr;
  uint64_t requests = 1000, interval_us = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--record" && has_value) record = argv[++i];
    else if (arg == "--go-file" && has_value) go_file = argv[++i];
    else if (arg == "--requests" && has_value) requests = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--interval-us" && has_value) interval_us = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--call-lazy") g_call_lazy = true;
    else {
      std::fprintf(stderr, "names_target: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  // Through volatile pointers, so these are the addresses the dynamic linker
  // bound (GLOB_DAT), not something the compiler folded.
  size_t (*volatile strlen_address)(const char*) = &std::strlen;
  void* (*volatile memset_address)(void*, int, size_t) = &std::memset;
  std::printf("func strlen %p\nfunc memset %p\npid %d\nready\n", reinterpret_cast<void*>(strlen_address),
              reinterpret_cast<void*>(memset_address), static_cast<int>(getpid()));
  std::fflush(stdout);
  const int record_fd = record ? open(record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  if (go_file != nullptr) {
    while (access(go_file, F_OK) != 0) usleep(1000);
  }
  for (uint64_t round = 0; round < requests; ++round) {
    Calls calls;
    measure(round, &calls);
    lam_f(static_cast<int>(round));
    const int tree = static_cast<int>(round % 4);
    helper_tree(tree);
    if (record_fd >= 0) {
      char line[160];
      const int length =
          std::snprintf(line, sizeof line, "%llu strlen=%llu memset=%llu wcsrchr=%llu strstr=%llu tree=%d\n",
                        static_cast<unsigned long long>(round), static_cast<unsigned long long>(calls.strlen_calls),
                        static_cast<unsigned long long>(calls.memset_calls),
                        static_cast<unsigned long long>(calls.wcsrchr_calls),
                        static_cast<unsigned long long>(calls.strstr_calls), tree);
      if (write(record_fd, line, static_cast<size_t>(length)) != length) return 1;
    }
    usleep(static_cast<useconds_t>(interval_us));
  }
  return 0;
}
