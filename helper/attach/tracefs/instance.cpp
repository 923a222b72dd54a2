#include "attach/tracefs/instance.h"

#include <unistd.h>

#include <sstream>

namespace xref {
namespace {

uint64_t value_after(const std::string& stats, const std::string& key) {
  uint64_t sum = 0;
  std::istringstream lines(stats);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) != 0) continue;
    sum += std::strtoull(line.c_str() + key.size(), nullptr, 10);
  }
  return sum;
}

}  // namespace

RingLoss parse_ring_stats(const std::string& stats) {
  RingLoss loss;
  loss.overrun = value_after(stats, "overrun:");
  loss.commit_overrun = value_after(stats, "commit overrun:");
  loss.dropped_events = value_after(stats, "dropped events:");
  return loss;
}

Result<TracefsInstance> TracefsInstance::create(const Tracefs& tracefs, const std::string& name,
                                                uint64_t buffer_kb_per_cpu) {
  TracefsInstance instance(tracefs, name);
  if (auto made = tracefs.make_directory(instance.relative()); !made) return made.error();
  if (auto configured = instance.configure(buffer_kb_per_cpu); !configured) {
    (void)instance.remove();
    return configured.error();
  }
  return instance;
}

Result<void> TracefsInstance::configure(uint64_t buffer_kb_per_cpu) {
  const std::string base = relative() + "/";
  if (auto off = tracefs_.write(base + "tracing_on", "0"); !off) return off;
  if (auto clock = tracefs_.write(base + "trace_clock", "mono"); !clock) {
    Error error = clock.error();
    error.message = "the mono trace clock is not available: " + error.message;
    error.code = ErrorCode::unsupported;
    return error;
  }
  if (auto size = tracefs_.write(base + "buffer_size_kb", std::to_string(buffer_kb_per_cpu)); !size) return size;
  if (auto overwrite = tracefs_.write(base + "options/overwrite", "0"); !overwrite) return overwrite;
  // Best effort: saved_tgids then names the process of a thread that is gone.
  (void)tracefs_.write(base + "options/record-tgid", "1");
  page_size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (auto subbuf = tracefs_.read(base + "buffer_subbuf_size_kb")) {
    const uint64_t kb = std::strtoull(subbuf->c_str(), nullptr, 10);
    if (kb > 0) page_size_ = static_cast<size_t>(kb) * 1024;
  }
  return {};
}

Result<void> TracefsInstance::enable_group(const std::string& group, bool enable) const {
  return tracefs_.write(relative() + "/events/" + group + "/enable", enable ? "1" : "0");
}

Result<void> TracefsInstance::set_tracing(bool on) const {
  return tracefs_.write(relative() + "/tracing_on", on ? "1" : "0");
}

Result<RingLoss> TracefsInstance::loss() const {
  RingLoss loss;
  const std::string per_cpu = relative() + "/per_cpu";
  for (const std::string& cpu : tracefs_.list(per_cpu)) {
    if (cpu.rfind("cpu", 0) != 0) continue;
    auto stats = tracefs_.read(per_cpu + "/" + cpu + "/stats");
    if (!stats) return stats.error();
    const RingLoss one = parse_ring_stats(*stats);
    loss.overrun += one.overrun;
    loss.commit_overrun += one.commit_overrun;
    loss.dropped_events += one.dropped_events;
  }
  return loss;
}

Result<void> TracefsInstance::remove() const { return tracefs_.remove_directory(relative()); }

}  // namespace xref
