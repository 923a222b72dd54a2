// The kernel's ring buffer pages as per_cpu/cpuN/trace_pipe_raw hands them
// out: a page header (a full timestamp, then the committed length with the
// missed-events flags) and compressed event headers, each a 5-bit type_len
// and a 27-bit time delta (docs: events/header_page, events/header_event).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attach/tracefs/format.h"
#include "result.h"

namespace xref {

struct RingPageLayout {
  uint32_t timestamp_offset = 0;
  uint32_t commit_offset = 8;
  uint32_t commit_size = 8;
  uint32_t data_offset = 16;
};

// From the text of events/header_page.
Result<RingPageLayout> ring_page_layout(const EventFormat& header_page);

struct RingPageSummary {
  size_t records = 0;
  bool missed_events = false;   // the kernel lost events before this page
  uint64_t missed_count = 0;    // how many, when the kernel stored it
  bool malformed = false;       // parsing stopped at a header that made no sense
};

using RingRecordVisitor = std::function<void(uint64_t timestamp_ns, std::span<const uint8_t> record)>;

// Calls `visit` for every data record of one page, in order, with its
// absolute timestamp (the page's plus the deltas and time extends before it).
RingPageSummary parse_ring_page(std::span<const uint8_t> page, const RingPageLayout& layout,
                                const RingRecordVisitor& visit);

// The trace_pipe_raw files of an instance, read without blocking. Reading
// consumes: each page is handed out once.
class RingReaders {
 public:
  // `instance_dir`: the instance's directory; `page_size`: its sub-buffer size.
  static Result<RingReaders> open(const std::string& instance_dir, size_t page_size);
  RingReaders() = default;
  RingReaders(RingReaders&& other) noexcept;
  RingReaders& operator=(RingReaders&& other) noexcept;
  RingReaders(const RingReaders&) = delete;
  RingReaders& operator=(const RingReaders&) = delete;
  ~RingReaders();

  // Reads the pages available now on every CPU, at most `max_pages` per CPU
  // (a CPU written to as fast as it is read must not hold the reader);
  // `page` gets each one. Returns how many CPUs had more than `max_pages`.
  Result<size_t> read_available(size_t max_pages,
                                const std::function<void(int cpu, std::span<const uint8_t> page)>& page);
  void close();
  size_t cpus() const { return fds_.size(); }

 private:
  std::vector<int> cpu_ids_;
  std::vector<int> fds_;
  std::vector<uint8_t> buffer_;
};

}  // namespace xref
