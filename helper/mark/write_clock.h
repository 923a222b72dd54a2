// When each write to a --mark-file completed, from bpf/mark_write.bpf.c
// (raw syscall tracepoints around write, pwrite64, writev, pwritev and
// pwritev2, filtered to the watched files). With it a
// log line's time is exact: the write that put its newline there returned
// at a known CLOCK_MONOTONIC time. Writes through mmap or io_uring are not
// seen; their lines keep the poll's bounds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "result.h"

struct mark_write_bpf;
struct xref_mark_file;
struct ring_buffer;

namespace xref {

class MarkWriteClock {
 public:
  // Loads and attaches the program; an error (no BPF, no BTF) says why, and the follower goes on with poll bounds.
  static Result<std::unique_ptr<MarkWriteClock>> start();
  ~MarkWriteClock();
  MarkWriteClock(const MarkWriteClock&) = delete;
  MarkWriteClock& operator=(const MarkWriteClock&) = delete;

  // Also time files created later under `path`'s name in its directory
  // (a rotation's new file); false when the name is too long for that.
  bool watch_path(const std::string& path);
  void watch(dev_t dev, ino_t ino);
  void unwatch(dev_t dev, ino_t ino);
  // Takes the writes recorded so far.
  void drain();
  // When the byte at `offset` of the file was last written; nullopt when no
  // recorded write covers it.
  std::optional<uint64_t> written_at(dev_t dev, ino_t ino, uint64_t offset) const;
  uint64_t lost_writes() const;

 private:
  struct Write {
    uint64_t end = 0;
    uint64_t timestamp_ns = 0;
  };
  // Per file, by first byte: the write whose bytes are there now (a later
  // write over the same bytes, after a truncation, replaces it).
  using Writes = std::map<uint64_t, Write>;
  using FileKey = std::pair<uint64_t, uint64_t>;  // kernel dev, inode
  static FileKey key_of(dev_t dev, ino_t ino);
  static xref_mark_file watched_key(const FileKey& key);  // the BPF map's key
  static int take(void* context, void* data, size_t size);

  MarkWriteClock() = default;
  mark_write_bpf* skeleton_ = nullptr;
  ring_buffer* ring_ = nullptr;
  std::map<FileKey, Writes> writes_;
};

}  // namespace xref
