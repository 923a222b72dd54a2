#include "profile/sampling_events.h"

#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "attach/libbpf_log.h"

namespace xref {
namespace {

struct KnownEvent {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr KnownEvent kEvents[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
};

constexpr size_t kRingDataPages = 1;

perf_event_attr sampling_attr(uint32_t type, uint64_t config, uint64_t frequency_hz) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.freq = 1;
  attr.sample_freq = frequency_hz;
  // Only throttling is read from the ring: the program returns 0, so no
  // sample record is written.
  attr.sample_type = PERF_SAMPLE_TID;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.disabled = 1;
  attr.exclude_hv = 1;
  attr.inherit = 1;
  attr.inherit_thread = 1;
  attr.remove_on_exec = 1;
  return attr;
}

// Opens `attr` on the helper itself: does this host have the event?
int try_open(perf_event_attr& attr) {
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  ::close(static_cast<int>(fd));
  return 0;
}

std::string errno_name(int error) {
  switch (error) {
    case ENOENT: return "ENOENT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    default: return std::strerror(error);
  }
}

uint64_t max_sample_rate() {
  std::ifstream file("/proc/sys/kernel/perf_event_max_sample_rate");
  uint64_t rate = 0;
  file >> rate;
  return rate;
}

}  // namespace

const std::vector<std::string>& sampling_event_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const KnownEvent& event : kEvents) list.push_back(event.name);
    return list;
  }();
  return names;
}

Result<SamplingEvent> choose_sampling_event(const std::string& named) {
  const std::string name = named.empty() ? "cycles" : named;
  const KnownEvent* known = nullptr;
  for (const KnownEvent& event : kEvents) {
    if (name == event.name) known = &event;
  }
  if (known == nullptr) {
    return make_error(ErrorCode::invalid_argument, "--event " + name + " is not an event xref knows",
                      "give cpu-clock, task-clock, cycles, instructions, ref-cycles, branches, branch-misses, "
                      "cache-misses or cache-references");
  }
  perf_event_attr attr = sampling_attr(known->type, known->config, 99);
  const int error = try_open(attr);
  SamplingEvent event{known->name, known->type, known->config, "named by --event",
                      known->type == PERF_TYPE_SOFTWARE};
  if (error == 0) {
    if (named.empty()) event.reason = "default: the host has a hardware PMU";
    return event;
  }
  if (named.empty()) {
    // No PMU (a VM without one): the CPU's clock instead, and why.
    return SamplingEvent{"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
                         "default: no hardware PMU (cycles: " + errno_name(error) + ")", true};
  }
  if (error == EACCES || error == EPERM) {
    return make_error(ErrorCode::permission_denied,
                      "perf_event_open of --event " + name + " failed: " + errno_name(error),
                      "run xref as root (CAP_PERFMON), or lower /proc/sys/kernel/perf_event_paranoid");
  }
  return make_error(ErrorCode::event_unavailable,
                    "this host has no " + name + " event (perf_event_open: " + errno_name(error) + ")",
                    "use --event cpu-clock (or leave --event out: the default falls back to cpu-clock where "
                    "there is no hardware PMU)");
}

Result<void> check_sampling_frequency(uint64_t frequency_hz) {
  const uint64_t limit = max_sample_rate();
  if (limit != 0 && frequency_hz > limit) {
    return make_error(ErrorCode::frequency_too_high,
                      "--freq " + std::to_string(frequency_hz) + " is above this host's limit of " +
                          std::to_string(limit) + " samples per second (/proc/sys/kernel/perf_event_max_sample_rate)",
                      "give --freq " + std::to_string(limit) + " or less (99 is the default)");
  }
  return {};
}

Error lbr_refusal() {
  perf_event_attr attr = sampling_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 99);
  attr.sample_type |= PERF_SAMPLE_BRANCH_STACK;
  attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_CALL_STACK;
  const int error = try_open(attr);
  if (error != 0) {
    return make_error(ErrorCode::event_unavailable,
                      "--callers lbr: this host has no last-branch records (perf_event_open with "
                      "PERF_SAMPLE_BRANCH_STACK: " + errno_name(error) + ")",
                      "use --callers dwarf (unwinds in BPF without frame pointers) or fp");
  }
  return make_error(ErrorCode::unsupported, "--callers lbr is not built yet (this host has last-branch records)",
                    "use --callers dwarf or fp");
}

Result<bool> SamplingEvents::open(uint32_t tid, const bpf_program* program) {
  perf_event_attr attr = sampling_attr(event_.type, event_.config, frequency_hz_);
  const long opened = syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (opened < 0) {
    const int error = errno;
    if (error == ESRCH) return false;
    const std::string what = "perf_event_open(" + event_.name + ") on thread " + std::to_string(tid) +
                             " failed: " + errno_name(error);
    if (error == EACCES || error == EPERM) {
      return make_error(ErrorCode::permission_denied, what, "run xref as root (CAP_PERFMON and CAP_SYS_PTRACE)");
    }
    return make_error(ErrorCode::event_unavailable, what, "use --event cpu-clock");
  }
  Event event{tid, static_cast<int>(opened), nullptr, nullptr};
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* ring = mmap(nullptr, page * (1 + kRingDataPages), PROT_READ | PROT_WRITE, MAP_SHARED, event.fd, 0);
  if (ring != MAP_FAILED) event.ring = ring;
  event.link = bpf_program__attach_perf_event(program, event.fd);
  if (event.link == nullptr) {
    const int error = -errno;
    if (event.ring != nullptr) munmap(event.ring, page * (1 + kRingDataPages));
    ::close(event.fd);
    return make_error(ErrorCode::unsupported,
                      "attaching the profile program to thread " + std::to_string(tid) + "'s " + event_.name +
                          " event failed: " + libbpf_message(error));
  }
  events_.push_back(event);
  return true;
}

void SamplingEvents::enable_all() {
  for (const Event& event : events_) ioctl(event.fd, PERF_EVENT_IOC_ENABLE, 0);
}

void SamplingEvents::disable_all() {
  for (const Event& event : events_) ioctl(event.fd, PERF_EVENT_IOC_DISABLE, 0);
}

// The records the kernel wrote since the last look: THROTTLE (the kernel
// stopped sampling this event a while: more interrupts than
// perf_event_max_sample_rate allows), and LOST.
void SamplingEvents::drain_ring(Event& event) {
  if (event.ring == nullptr) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* meta = static_cast<perf_event_mmap_page*>(event.ring);
  const uint8_t* data = static_cast<const uint8_t*>(event.ring) + page;
  const uint64_t size = page * kRingDataPages;
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header header;
    for (size_t byte = 0; byte < sizeof header; ++byte) {
      reinterpret_cast<uint8_t*>(&header)[byte] = data[(tail + byte) % size];
    }
    if (header.size == 0) break;
    if (header.type == PERF_RECORD_THROTTLE) ++throttles_;
    if (header.type == PERF_RECORD_LOST) {
      uint64_t lost = 0;
      for (size_t byte = 0; byte < sizeof lost; ++byte) {
        reinterpret_cast<uint8_t*>(&lost)[byte] = data[(tail + sizeof header + 8 + byte) % size];
      }
      lost_ += lost;
    }
    tail += header.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

uint64_t SamplingEvents::take_throttles() {
  for (Event& event : events_) drain_ring(event);
  const uint64_t taken = throttles_;
  throttles_ = 0;
  return taken;
}

EventCount SamplingEvents::total() const {
  EventCount total;
  for (const Event& event : events_) {
    uint64_t values[3] = {0, 0, 0};
    if (::read(event.fd, values, sizeof values) != static_cast<ssize_t>(sizeof values)) continue;
    total.value += values[0];
    total.enabled_ns += values[1];
    total.running_ns += values[2];
  }
  return total;
}

void SamplingEvents::close_all() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (Event& event : events_) {
    if (event.ring != nullptr) munmap(event.ring, page * (1 + kRingDataPages));
    // Destroying a perf link closes its event descriptor too.
    if (event.link != nullptr) {
      bpf_link__destroy(event.link);
    } else if (event.fd >= 0) {
      ::close(event.fd);
    }
  }
  events_.clear();
}

}  // namespace xref
