#include "attach/tracefs/ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attach/tracefs/fs.h"

namespace xref {
namespace {

// include/linux/ring_buffer.h and kernel/trace/ring_buffer.c
constexpr uint32_t kTypePadding = 29;
constexpr uint32_t kTypeTimeExtend = 30;
constexpr uint32_t kTypeTimeStamp = 31;
constexpr uint32_t kTimeShift = 27;
constexpr uint64_t kMissedEvents = 1ull << 31;
constexpr uint64_t kMissedStored = 1ull << 30;
constexpr uint64_t kCommitMask = (1ull << 27) - 1;

uint32_t read_u32(std::span<const uint8_t> bytes, size_t at) {
  uint32_t value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

uint64_t read_le(std::span<const uint8_t> bytes, size_t at, size_t size) {
  uint64_t value = 0;
  for (size_t i = 0; i < size && i < 8; ++i) value |= uint64_t{bytes[at + i]} << (8 * i);
  return value;
}

}  // namespace

Result<RingPageLayout> ring_page_layout(const EventFormat& header_page) {
  const EventField* timestamp = header_page.field("timestamp");
  const EventField* commit = header_page.field("commit");
  const EventField* data = header_page.field("data");
  if (timestamp == nullptr || commit == nullptr || data == nullptr || timestamp->size != 8 || commit->size > 8) {
    return make_error(ErrorCode::unsupported, "unexpected ring buffer page header (events/header_page)");
  }
  RingPageLayout layout;
  layout.timestamp_offset = timestamp->offset;
  layout.commit_offset = commit->offset;
  layout.commit_size = commit->size;
  layout.data_offset = data->offset;
  return layout;
}

RingPageSummary parse_ring_page(std::span<const uint8_t> page, const RingPageLayout& layout,
                                const RingRecordVisitor& visit) {
  RingPageSummary summary;
  if (page.size() < layout.data_offset || page.size() < layout.commit_offset + layout.commit_size) {
    summary.malformed = true;
    return summary;
  }
  uint64_t timestamp = read_le(page, layout.timestamp_offset, 8);
  const uint64_t commit = read_le(page, layout.commit_offset, layout.commit_size);
  const size_t length = static_cast<size_t>(commit & kCommitMask);
  const size_t end = std::min(page.size(), layout.data_offset + length);
  summary.missed_events = (commit & kMissedEvents) != 0;
  if ((commit & kMissedStored) != 0 && end + 8 <= page.size()) summary.missed_count = read_le(page, end, 8);

  size_t at = layout.data_offset;
  while (at + 4 <= end) {
    const uint32_t header = read_u32(page, at);
    const uint32_t type_len = header & 31u;
    const uint64_t delta = header >> 5;
    if (type_len == kTypePadding) {
      if (at + 8 > end) break;
      const uint32_t size = read_u32(page, at + 4);
      if (size == 0 && delta == 0) break;  // the rest of the page is empty
      at += 4 + size;
      continue;
    }
    if (type_len == kTypeTimeExtend || type_len == kTypeTimeStamp) {
      if (at + 8 > end) {
        summary.malformed = true;
        break;
      }
      const uint64_t extended = (uint64_t{read_u32(page, at + 4)} << kTimeShift) + delta;
      if (type_len == kTypeTimeExtend) {
        timestamp += extended;
      } else {
        // An absolute stamp keeps only the low 59 bits; the top ones are the page's.
        timestamp = (timestamp & ~((1ull << 59) - 1)) | extended;
      }
      at += 8;
      continue;
    }
    size_t data = at + 4;
    size_t size = size_t{type_len} * 4;
    if (type_len == 0) {
      if (at + 8 > end) {
        summary.malformed = true;
        break;
      }
      const uint32_t with_length = read_u32(page, at + 4);  // counts its own 4 bytes
      if (with_length < 4) {
        summary.malformed = true;
        break;
      }
      data = at + 8;
      size = (with_length - 4 + 3) & ~size_t{3};
    }
    if (data + size > end) {
      summary.malformed = true;
      break;
    }
    timestamp += delta;
    visit(timestamp, page.subspan(data, size));
    ++summary.records;
    at = data + size;
  }
  return summary;
}

Result<RingReaders> RingReaders::open(const std::string& instance_dir, size_t page_size) {
  RingReaders readers;
  readers.buffer_.resize(page_size);
  const std::string per_cpu = instance_dir + "/per_cpu";
  DIR* directory = opendir(per_cpu.c_str());
  if (directory == nullptr) return tracefs_error("cannot list", per_cpu, errno);
  while (const dirent* entry = readdir(directory)) {
    const std::string name = entry->d_name;
    if (name.rfind("cpu", 0) == 0 && name.size() > 3) readers.cpu_ids_.push_back(std::stoi(name.substr(3)));
  }
  closedir(directory);
  std::sort(readers.cpu_ids_.begin(), readers.cpu_ids_.end());
  for (int cpu : readers.cpu_ids_) {
    const std::string path = per_cpu + "/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tracefs_error("cannot open", path, errno);
    readers.fds_.push_back(fd);
  }
  if (readers.fds_.empty()) return make_error(ErrorCode::unsupported, "no per-CPU buffers in " + per_cpu);
  return readers;
}

RingReaders::RingReaders(RingReaders&& other) noexcept
    : cpu_ids_(std::move(other.cpu_ids_)), fds_(std::move(other.fds_)), buffer_(std::move(other.buffer_)) {
  other.fds_.clear();
}

RingReaders& RingReaders::operator=(RingReaders&& other) noexcept {
  if (this != &other) {
    close();
    cpu_ids_ = std::move(other.cpu_ids_);
    fds_ = std::move(other.fds_);
    buffer_ = std::move(other.buffer_);
    other.fds_.clear();
  }
  return *this;
}

RingReaders::~RingReaders() { close(); }

void RingReaders::close() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

Result<size_t> RingReaders::read_available(size_t max_pages,
                                           const std::function<void(int cpu, std::span<const uint8_t> page)>& page) {
  size_t capped = 0;
  for (size_t i = 0; i < fds_.size(); ++i) {
    for (size_t pages = 0;; ++pages) {
      if (pages == max_pages) {
        ++capped;
        break;
      }
      const ssize_t count = ::read(fds_[i], buffer_.data(), buffer_.size());
      if (count < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return tracefs_error("cannot read", "per_cpu/cpu" + std::to_string(cpu_ids_[i]) + "/trace_pipe_raw", errno);
      }
      if (count == 0) break;
      page(cpu_ids_[i], std::span<const uint8_t>(buffer_.data(), static_cast<size_t>(count)));
    }
  }
  return capped;
}

}  // namespace xref
