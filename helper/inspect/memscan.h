// Bounded search of a live process's memory for a sequence of u64 words at
// 8-byte-aligned addresses, with a compact classified context window around
// each hit. Reads /proc/PID/mem read-only: the target is never written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "address_space.h"
#include "proc_maps.h"
#include "result.h"

namespace xref {

struct MemscanLimits {
  static constexpr size_t max_pattern_words = 16;
  static constexpr uint32_t max_context_words = 64;
  static constexpr uint32_t max_hits = 4096;
  static constexpr uint64_t max_read_bytes = uint64_t{64} << 30;
};

struct MemscanOptions {
  std::vector<uint64_t> pattern;
  uint32_t before_words = 2;
  uint32_t after_words = 6;
  uint32_t max_hits = 32;
  uint64_t max_read_bytes = uint64_t{1} << 30;
};

// Checks the bounds above; invalid_argument naming the offending option.
Result<void> validate(const MemscanOptions& options);

struct ContextWord {
  uint64_t address = 0;
  std::optional<uint64_t> value;  // absent when unreadable
  bool in_match = false;
  std::string classification;     // zero, code_pointer, module_data_pointer, heap_pointer, ...
  std::string evidence;           // what the classification rests on
};

struct MemscanHit {
  uint64_t address = 0;
  MapEntry region;
  std::vector<ContextWord> context;
  bool context_clipped = false;   // the window was cut at the region's edge
};

struct SkippedRegion {
  MapEntry region;
  std::string reason;
};

struct MemscanResult {
  std::vector<MemscanHit> hits;
  uint64_t regions_scanned = 0;
  uint64_t bytes_read = 0;
  std::vector<SkippedRegion> skipped;
  std::vector<std::string> stops;  // "max_hits", "max_read_bytes"
};

Result<MemscanResult> memscan(pid_t pid, const AddressSpace& space, const MemscanOptions& options);
// Classifies one word as a pointer into which mapping, code, text, etc.
ContextWord classify_word(const AddressSpace& space, uint64_t address, uint64_t value);
nlohmann::json memscan_json(const MemscanResult& result);

}  // namespace xref
