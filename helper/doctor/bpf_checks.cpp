// Doctor's BPF checks: load the real doctor program (bpf/doctor.bpf.c, from
// the embedded skeleton), attach it to a function of this very process by
// both uprobe paths, call the function, and see the events arrive.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "address_space.h"
#include "attach/libbpf_log.h"
#include "attach/uprobe_attach.h"
#include "doctor.skel.h"
#include "doctor/checks.h"
#include "doctor_event.h"
#include "hex.h"
#include "process_identity.h"

// The self-test target: a real function of the helper that the probes hit.
extern "C" __attribute__((noinline, used)) uint64_t xref_doctor_uprobe_target(uint64_t value) {
  asm volatile("" : "+r"(value)::"memory");
  return value + 1;
}

namespace xref {
namespace {

constexpr uint64_t kSelfTestArgument = 0x5eed5eed;

struct SkeletonDeleter {
  void operator()(doctor_bpf* skeleton) const { doctor_bpf__destroy(skeleton); }
};
using Skeleton = std::unique_ptr<doctor_bpf, SkeletonDeleter>;

struct RingDeleter {
  void operator()(ring_buffer* ring) const { ring_buffer__free(ring); }
};

int collect_event(void* context, void* data, size_t size) {
  if (size >= sizeof(doctor_event)) {
    doctor_event event;
    std::memcpy(&event, data, sizeof event);
    static_cast<std::vector<doctor_event>*>(context)->push_back(event);
  }
  return 0;
}

Result<Skeleton> load_skeleton(bool for_uprobe_multi) {
  Skeleton skeleton(doctor_bpf__open());
  if (!skeleton) return make_error(ErrorCode::internal, "opening the embedded BPF object failed: " + libbpf_message(-errno));
  skeleton->rodata->target_tgid = static_cast<uint32_t>(getpid());
  if (for_uprobe_multi) {
    bpf_program__set_expected_attach_type(skeleton->progs.doctor_probe,
                                          static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  }
  const int error = doctor_bpf__load(skeleton.get());
  if (error != 0) {
    const ErrorCode code = (error == -EPERM || error == -EACCES) ? ErrorCode::permission_denied : ErrorCode::unsupported;
    return make_error(code, "loading the BPF program failed: " + libbpf_message(error));
  }
  return skeleton;
}

// Fires the target once and waits briefly for the event with `cookie`.
Result<doctor_event> fire_and_receive(doctor_bpf& skeleton, uint64_t cookie) {
  std::vector<doctor_event> events;
  std::unique_ptr<ring_buffer, RingDeleter> ring(
      ring_buffer__new(bpf_map__fd(skeleton.maps.events), collect_event, &events, nullptr));
  if (!ring) return make_error(ErrorCode::unsupported, "ring buffer setup failed: " + libbpf_message(-errno));
  const uint64_t returned = xref_doctor_uprobe_target(kSelfTestArgument);
  if (returned != kSelfTestArgument + 1) return make_error(ErrorCode::internal, "self-test target was disturbed");
  for (int attempt = 0; attempt < 10 && events.empty(); ++attempt) ring_buffer__poll(ring.get(), 50);
  for (const auto& event : events) {
    if (event.cookie == cookie && event.arg0 == kSelfTestArgument) return event;
  }
  return make_error(ErrorCode::unsupported,
                    "the probe was attached but no matching event arrived (" + std::to_string(events.size()) + " events)");
}

}  // namespace

void check_bpf_uprobes(DoctorReport& report) {
  auto self = ProcessHandle::open(getpid());
  if (!self) {
    report.checks.push_back({"bpf_load", CheckStatus::failed, self.error().message, ""});
    return;
  }
  auto space = AddressSpace::read(*self);
  const uint64_t target_va = reinterpret_cast<uint64_t>(&xref_doctor_uprobe_target);
  const LiveAddress target = space ? space->resolve_live(target_va) : LiveAddress{};
  if (!target.file_offset) {
    report.checks.push_back({"bpf_load", CheckStatus::failed, "cannot locate the self-test function in the helper", ""});
    return;
  }
  const std::string path = self->exe_link();
  const uint64_t offset = *target.file_offset;

  auto skeleton = load_skeleton(false);
  if (!skeleton) {
    report.checks.push_back({"bpf_load", CheckStatus::failed, skeleton.error().message,
                             "run as root; the kernel needs CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS"});
    return;
  }
  report.checks.push_back({"bpf_load", CheckStatus::ok, "loaded the embedded doctor program (kprobe type, ringbuf map)", ""});

  const uint64_t perf_cookie = 0xd0c7000000000001ull;
  auto perf_link = attach_perf_uprobes(bpf_program__fd((*skeleton)->progs.doctor_probe), path,
                                       std::span<const uint64_t>(&offset, 1),
                                       std::span<const uint64_t>(&perf_cookie, 1), getpid());
  bool ringbuf_seen = false;
  if (!perf_link) {
    report.checks.push_back({"perf_uprobe", CheckStatus::failed, perf_link.error().message, perf_link.error().hint});
  } else {
    auto event = fire_and_receive(**skeleton, perf_cookie);
    perf_link->close();
    if (event) {
      ringbuf_seen = true;
      report.checks.push_back({"perf_uprobe", CheckStatus::ok,
                               "perf uprobe at file offset " + to_hex(offset) + " fired with its cookie, ip " +
                                   to_hex(event->ip),
                               ""});
    } else {
      report.checks.push_back({"perf_uprobe", CheckStatus::failed, event.error().message, ""});
    }
  }

  auto multi_skeleton = load_skeleton(true);
  if (!multi_skeleton) {
    report.checks.push_back({"uprobe_multi", CheckStatus::missing, multi_skeleton.error().message,
                             "the kernel predates uprobe_multi (6.6); xref falls back to one perf uprobe per address"});
  } else {
    const uint64_t multi_cookie = 0xd0c7000000000002ull;
    auto multi_link = attach_uprobe_multi(bpf_program__fd((*multi_skeleton)->progs.doctor_probe), path,
                                          std::span<const uint64_t>(&offset, 1),
                                          std::span<const uint64_t>(&multi_cookie, 1), getpid());
    if (!multi_link) {
      report.checks.push_back({"uprobe_multi", CheckStatus::missing, multi_link.error().message,
                               "the kernel predates uprobe_multi (6.6); xref falls back to one perf uprobe per address"});
    } else {
      auto event = fire_and_receive(**multi_skeleton, multi_cookie);
      multi_link->close();
      if (event) {
        ringbuf_seen = true;
        report.checks.push_back({"uprobe_multi", CheckStatus::ok,
                                 "one BPF_TRACE_UPROBE_MULTI link fired with its cookie, ip " + to_hex(event->ip), ""});
      } else {
        report.checks.push_back({"uprobe_multi", CheckStatus::failed, event.error().message, ""});
      }
    }
  }
  report.checks.push_back({"ringbuf", ringbuf_seen ? CheckStatus::ok : CheckStatus::failed,
                           ringbuf_seen ? "events arrived through a BPF ring buffer" : "no event arrived through the ring buffer",
                           ""});
}

}  // namespace xref
