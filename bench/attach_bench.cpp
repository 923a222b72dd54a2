// Attach-time benchmark: how long attaching N uprobes to a live process
// takes with one uprobe_multi link versus one perf uprobe (plus a BPF link)
// per address. The addresses are real instruction starts of the target's
// libc (from xref's own disassembly), so nothing lands mid-instruction; the
// target never runs most of them, so this measures attach and detach only.
//
//   attach_bench --pid P [--counts 10,100,1000,10000] [--rounds 3]
//
// Prints one Markdown table row per count: median milliseconds for each way.
#include <bpf/libbpf.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "address_space.h"
#include "attach/uprobe_attach.h"
#include "disassembly.h"
#include "doctor.skel.h"
#include "process_identity.h"

namespace {

using Clock = std::chrono::steady_clock;

struct SkeletonDeleter {
  void operator()(doctor_bpf* skeleton) const { doctor_bpf__destroy(skeleton); }
};
using Skeleton = std::unique_ptr<doctor_bpf, SkeletonDeleter>;

Skeleton load(pid_t pid, bool uprobe_multi) {
  Skeleton skeleton(doctor_bpf__open());
  if (!skeleton) return nullptr;
  skeleton->rodata->target_tgid = static_cast<uint32_t>(pid);
  if (uprobe_multi) {
    bpf_program__set_expected_attach_type(skeleton->progs.doctor_probe,
                                          static_cast<bpf_attach_type>(xref::kBpfTraceUprobeMulti));
  }
  if (doctor_bpf__load(skeleton.get()) != 0) return nullptr;
  return skeleton;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  pid_t pid = 0;
  std::vector<size_t> counts = {10, 100, 1000, 10000};
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pid") pid = static_cast<pid_t>(std::atoi(argv[i + 1]));
    if (flag == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--counts") {
      counts.clear();
      std::string list = argv[i + 1];
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        counts.push_back(std::stoul(list.substr(start, comma - start)));
        start = comma + 1;
      }
    }
  }
  libbpf_set_print([](enum libbpf_print_level, const char*, va_list) { return 0; });
  // Two descriptors per perf uprobe: 10,000 probes need more than the usual 1024.
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  auto process = xref::ProcessHandle::open(pid);
  if (!process) {
    std::fprintf(stderr, "attach_bench: %s\n", process.error().message.c_str());
    return 1;
  }
  auto space = xref::AddressSpace::read(*process);
  const xref::Module* libc = space ? space->find_module("libc.so.6") : nullptr;
  if (libc == nullptr) {
    std::fprintf(stderr, "attach_bench: the target maps no libc.so.6\n");
    return 1;
  }
  auto image = space->image(*libc);
  if (!image) return 1;
  // A few more than asked for: the kernel may refuse some.
  const size_t wanted = *std::max_element(counts.begin(), counts.end()) * 11 / 10;
  std::vector<uint64_t> offsets;
  for (const xref::FunctionSymbol* symbol : (*image)->all_functions()) {
    const xref::FunctionSymbol& function = *symbol;
    if (offsets.size() >= wanted) break;
    if (function.source == xref::SymbolSource::plt || function.size == 0) continue;
    auto code = xref::disassemble(**image, function);
    if (!code || !code->complete()) continue;
    // Calls, rets and function entries: the instructions xref probes (the
    // kernel refuses uprobes on a few instruction kinds).
    for (const auto& instruction : code->instructions) {
      const bool probed_kind = instruction.address == function.start || instruction.kind == xref::InstructionKind::call ||
                               instruction.kind == xref::InstructionKind::ret;
      if (!probed_kind) continue;
      auto offset = (*image)->file_offset_of(instruction.address);
      if (offset && offsets.size() < wanted) offsets.push_back(*offset);
    }
  }
  if (offsets.size() < wanted) {
    std::fprintf(stderr, "attach_bench: only %zu instruction starts found\n", offsets.size());
    return 1;
  }
  std::vector<uint64_t> cookies(offsets.size());
  for (size_t i = 0; i < cookies.size(); ++i) cookies[i] = i;

  Skeleton multi = load(pid, true);
  Skeleton single = load(pid, false);
  if (!multi || !single) {
    std::fprintf(stderr, "attach_bench: cannot load the BPF program (run as root)\n");
    return 1;
  }
  // The kernel refuses uprobes on a few instructions (ENOTSUPP); drop those
  // before timing, chunk by chunk.
  const int multi_fd = bpf_program__fd(multi->progs.doctor_probe);
  std::vector<uint64_t> usable;
  size_t refused = 0;
  for (size_t start = 0; start < offsets.size(); start += 500) {
    const size_t end = std::min(offsets.size(), start + 500);
    const std::span<const uint64_t> chunk(offsets.data() + start, end - start);
    if (auto link = xref::attach_uprobe_multi(multi_fd, libc->open_path, chunk, std::span(cookies.data(), chunk.size()),
                                              pid)) {
      usable.insert(usable.end(), chunk.begin(), chunk.end());
      continue;
    }
    for (uint64_t offset : chunk) {
      if (xref::attach_uprobe_multi(multi_fd, libc->open_path, std::span(&offset, 1), std::span(cookies.data(), 1), pid)) {
        usable.push_back(offset);
      } else {
        ++refused;
      }
    }
  }
  offsets = usable;
  std::fprintf(stderr, "attach_bench: %zu addresses, %zu refused by the kernel\n", offsets.size(), refused);
  counts.erase(std::remove_if(counts.begin(), counts.end(), [&](size_t count) { return count > offsets.size(); }),
               counts.end());
  std::printf("| probes | uprobe_multi attach (ms) | perf uprobes attach (ms) | ratio | uprobe_multi detach (ms) | perf uprobes detach (ms) |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  for (size_t count : counts) {
    std::vector<double> multi_ms, perf_ms, multi_detach_ms, perf_detach_ms;
    const std::span<const uint64_t> some_offsets(offsets.data(), count);
    const std::span<const uint64_t> some_cookies(cookies.data(), count);
    for (int round = 0; round < rounds; ++round) {
      auto started = Clock::now();
      auto link = xref::attach_uprobe_multi(bpf_program__fd(multi->progs.doctor_probe), libc->open_path,
                                            some_offsets, some_cookies, pid);
      multi_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
      if (!link) {
        std::fprintf(stderr, "attach_bench: uprobe_multi: %s\n", link.error().message.c_str());
        return 1;
      }
      started = Clock::now();
      link->close();
      multi_detach_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
      started = Clock::now();
      auto perf = xref::attach_perf_uprobes(bpf_program__fd(single->progs.doctor_probe), libc->open_path,
                                            some_offsets, some_cookies, pid);
      perf_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
      if (!perf) {
        std::fprintf(stderr, "attach_bench: perf uprobes: %s\n", perf.error().message.c_str());
        return 1;
      }
      // Each perf event's BPF detach waits for an RCU tasks-trace grace
      // period: on this kernel that, not the attach, dominates.
      started = Clock::now();
      perf->close();
      perf_detach_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
    }
    const double a = median(multi_ms), b = median(perf_ms);
    std::printf("| %zu | %.2f | %.2f | %.1fx | %.2f | %.2f |\n", count, a, b, b / a, median(multi_detach_ms),
                median(perf_detach_ms));
    std::fflush(stdout);
  }
  return 0;
}
