#include "mark/write_clock.h"

#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "attach/libbpf_log.h"
#include "mark_write.h"
#include "mark_write.skel.h"

namespace xref {
namespace {

constexpr size_t kWritesKept = 65536;  // per file; older writes are forgotten

}  // namespace

Result<std::unique_ptr<MarkWriteClock>> MarkWriteClock::start() {
  configure_libbpf_logging();
  std::unique_ptr<MarkWriteClock> clock(new MarkWriteClock());
  clock->skeleton_ = mark_write_bpf__open();
  if (clock->skeleton_ == nullptr) {
    return make_error(ErrorCode::unsupported, "opening the write-time program failed: " + libbpf_message(-errno));
  }
  if (const int loaded = mark_write_bpf__load(clock->skeleton_); loaded != 0) {
    return make_error(ErrorCode::unsupported, "loading the write-time program failed: " + libbpf_message(loaded));
  }
  if (const int attached = mark_write_bpf__attach(clock->skeleton_); attached != 0) {
    return make_error(ErrorCode::unsupported, "attaching the write-time program to the syscall tracepoints failed: " + libbpf_message(attached));
  }
  clock->ring_ = ring_buffer__new(bpf_map__fd(clock->skeleton_->maps.writes), &MarkWriteClock::take, clock.get(),
                                  nullptr);
  if (clock->ring_ == nullptr) {
    return make_error(ErrorCode::unsupported, "opening the write-time ring buffer failed: " + libbpf_message(-errno));
  }
  return clock;
}

MarkWriteClock::~MarkWriteClock() {
  if (ring_ != nullptr) ring_buffer__free(ring_);
  if (skeleton_ != nullptr) mark_write_bpf__destroy(skeleton_);
}

MarkWriteClock::FileKey MarkWriteClock::key_of(dev_t dev, ino_t ino) {
  // The kernel's dev_t: 12 bits of major above 20 bits of minor.
  const uint64_t kernel_dev = (static_cast<uint64_t>(major(dev)) << 20) | minor(dev);
  return {kernel_dev, static_cast<uint64_t>(ino)};
}

bool MarkWriteClock::watch_path(const std::string& path) {
  const std::filesystem::path absolute = std::filesystem::absolute(path);
  const std::string name = absolute.filename().string();
  struct stat directory {};
  if (name.empty() || name.size() >= XREF_MARK_NAME_MAX || stat(absolute.parent_path().c_str(), &directory) != 0) {
    return false;
  }
  std::memcpy(skeleton_->bss->path_name, name.c_str(), name.size() + 1);
  const FileKey key = key_of(directory.st_dev, directory.st_ino);
  skeleton_->bss->path_dir_dev = static_cast<uint32_t>(key.first);
  skeleton_->bss->path_dir_ino = key.second;
  return true;
}

xref_mark_file MarkWriteClock::watched_key(const FileKey& key) {
  xref_mark_file file{};
  file.ino = key.second;
  file.dev = static_cast<uint32_t>(key.first);
  return file;
}

void MarkWriteClock::watch(dev_t dev, ino_t ino) {
  const xref_mark_file file = watched_key(key_of(dev, ino));
  const uint8_t yes = 1;
  bpf_map__update_elem(skeleton_->maps.watched, &file, sizeof file, &yes, sizeof yes, BPF_ANY);
}

void MarkWriteClock::unwatch(dev_t dev, ino_t ino) {
  const FileKey key = key_of(dev, ino);
  const xref_mark_file file = watched_key(key);
  bpf_map__delete_elem(skeleton_->maps.watched, &file, sizeof file, 0);
  writes_.erase(key);
}

int MarkWriteClock::take(void* context, void* data, size_t size) {
  if (size < sizeof(xref_mark_write)) return 0;
  auto* self = static_cast<MarkWriteClock*>(context);
  const auto* record = static_cast<const xref_mark_write*>(data);
  if (record->length == 0 || record->length > record->end) return 0;
  Writes& writes = self->writes_[{record->dev, record->ino}];
  const uint64_t begin = record->end - record->length;
  // The bytes this write covers are its own now: older writes keep only
  // their parts outside it.
  auto overlap = writes.lower_bound(begin);
  if (overlap != writes.begin() && std::prev(overlap)->second.end > begin) --overlap;
  while (overlap != writes.end() && overlap->first < record->end) {
    const uint64_t old_begin = overlap->first;
    const Write old = overlap->second;
    overlap = writes.erase(overlap);
    if (old_begin < begin) writes[old_begin] = Write{begin, old.timestamp_ns};
    if (old.end > record->end) writes[record->end] = Write{old.end, old.timestamp_ns};
  }
  writes[begin] = Write{record->end, record->timestamp_ns};
  if (writes.size() > kWritesKept) writes.erase(writes.begin());  // the oldest bytes are read long since
  return 0;
}

void MarkWriteClock::drain() { ring_buffer__consume(ring_); }

std::optional<uint64_t> MarkWriteClock::written_at(dev_t dev, ino_t ino, uint64_t offset) const {
  auto file = writes_.find(key_of(dev, ino));
  if (file == writes_.end()) return std::nullopt;
  auto after = file->second.upper_bound(offset);
  if (after == file->second.begin()) return std::nullopt;
  const Write& write = std::prev(after)->second;
  if (offset >= write.end) return std::nullopt;
  return write.timestamp_ns;
}

uint64_t MarkWriteClock::lost_writes() const { return skeleton_->bss->lost_writes; }

}  // namespace xref
