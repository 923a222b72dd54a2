#include "inspect/memscan.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hex.h"
#include "output/json_envelope.h"
#include "process/resolve.h"
#include "ptrace_access.h"

namespace xref {
namespace {

constexpr uint64_t kChunkBytes = 1 << 20;
constexpr uint64_t kWord = 8;

// Kernel pages that are not the process's data; reading them is useless or fails.
bool excluded_region(const MapEntry& region, std::string& reason) {
  if (!region.readable()) {
    reason = "not readable";
    return true;
  }
  if (region.path == "[vvar]" || region.path == "[vvar_vclock]" || region.path == "[vsyscall]") {
    reason = "kernel-provided page";
    return true;
  }
  return false;
}

bool printable_word(uint64_t value, std::string& text) {
  text.clear();
  for (int i = 0; i < 8; ++i) {
    const char c = static_cast<char>((value >> (8 * i)) & 0xff);
    if (c == 0 && i > 0) break;
    if (c < 0x20 || c > 0x7e) return false;
    text.push_back(c);
  }
  return text.size() >= 4;
}

ssize_t read_memory(int fd, uint64_t address, uint8_t* buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t count = pread(fd, buffer + done, size - done, static_cast<off_t>(address + done));
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return done > 0 ? static_cast<ssize_t>(done) : count;
    done += static_cast<size_t>(count);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

Result<void> validate(const MemscanOptions& options) {
  auto bad = [](const std::string& message, const std::string& hint) {
    return make_error(ErrorCode::invalid_argument, message, hint);
  };
  if (options.pattern.empty()) return bad("memscan needs at least one U64 value", "e.g. xref memscan --pid P 0x1122334455667788");
  if (options.pattern.size() > MemscanLimits::max_pattern_words) {
    return bad(std::to_string(options.pattern.size()) + " values given; a pattern has at most " +
                   std::to_string(MemscanLimits::max_pattern_words) + " words",
               "search for a shorter, distinctive part");
  }
  if (options.before_words > MemscanLimits::max_context_words || options.after_words > MemscanLimits::max_context_words) {
    return bad("--before-words and --after-words are at most " + std::to_string(MemscanLimits::max_context_words),
               "ask for a smaller context window");
  }
  if (options.max_hits == 0 || options.max_hits > MemscanLimits::max_hits) {
    return bad("--max-hits must be between 1 and " + std::to_string(MemscanLimits::max_hits), "");
  }
  if (options.max_read_bytes < kWord || options.max_read_bytes > MemscanLimits::max_read_bytes) {
    return bad("--max-read-bytes must be between 8 and " + std::to_string(MemscanLimits::max_read_bytes), "");
  }
  return {};
}

ContextWord classify_word(const AddressSpace& space, uint64_t address, uint64_t value) {
  ContextWord word;
  word.address = address;
  word.value = value;
  std::string text;
  if (value == 0) {
    word.classification = "zero";
    return word;
  }
  if (const MapEntry* target = find_mapping(space.maps(), value)) {
    word.evidence = "points into " + target->perms + " " + target->label();
    if (target->path == "[heap]") {
      word.classification = "heap_pointer";
    } else if (target->path.rfind("[stack", 0) == 0) {
      word.classification = "stack_pointer";
    } else if (target->pseudo()) {
      word.classification = "pseudo_pointer";
    } else if (!target->file_backed()) {
      word.classification = "anon_pointer";
    } else if (target->executable()) {
      word.classification = "code_pointer";
      const ResolvedAddress resolved = resolve_address(space, value);
      if (!resolved.candidates.empty()) word.evidence = describe_candidate(resolved.candidates.front());
    } else {
      word.classification = "module_data_pointer";
      const ResolvedAddress resolved = resolve_address(space, value);
      if (!resolved.candidates.empty()) word.evidence = describe_candidate(resolved.candidates.front());
    }
    return word;
  }
  if (printable_word(value, text)) {
    word.classification = "ascii";
    word.evidence = "\"" + text + "\"";
  } else if (value < 0x10000) {
    word.classification = "small_integer";
  } else {
    word.classification = "value";
  }
  return word;
}

Result<MemscanResult> memscan(pid_t pid, const AddressSpace& space, const MemscanOptions& options) {
  if (auto valid = validate(options); !valid) return valid.error();
  const std::string path = "/proc/" + std::to_string(pid) + "/mem";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int saved = errno;
    if (saved == ENOENT || saved == ESRCH) {
      return make_error(ErrorCode::process_exited, "process " + std::to_string(pid) + " exited");
    }
    if (saved == EACCES || saved == EPERM) return ptrace_access_denied(pid, path, saved);
    return make_error(ErrorCode::permission_denied, path + ": " + std::strerror(saved));
  }

  MemscanResult result;
  const uint64_t pattern_bytes = options.pattern.size() * kWord;
  std::vector<uint8_t> buffer(kChunkBytes + pattern_bytes);
  std::vector<uint8_t> needle(pattern_bytes);
  std::memcpy(needle.data(), options.pattern.data(), pattern_bytes);

  for (const MapEntry& region : space.maps()) {
    if (!result.stops.empty()) break;
    std::string reason;
    if (excluded_region(region, reason)) {
      result.skipped.push_back({region, reason});
      continue;
    }
    ++result.regions_scanned;
    // Chunks overlap by the pattern length so a match across a chunk edge is found once.
    for (uint64_t chunk = region.start; chunk < region.end && result.stops.empty(); chunk += kChunkBytes) {
      const uint64_t want = std::min<uint64_t>(kChunkBytes + pattern_bytes - kWord, region.end - chunk);
      if (result.bytes_read + want > options.max_read_bytes) {
        result.stops.push_back("max_read_bytes");
        break;
      }
      const ssize_t got = read_memory(fd, chunk, buffer.data(), want);
      if (got <= 0) {
        result.skipped.push_back({region, "read failed at " + to_hex(chunk) + ": " + std::strerror(errno)});
        break;
      }
      result.bytes_read += static_cast<uint64_t>(got);
      const uint64_t limit = std::min<uint64_t>(static_cast<uint64_t>(got), kChunkBytes + pattern_bytes - kWord);
      for (uint64_t at = 0; at + pattern_bytes <= limit && at < kChunkBytes; at += kWord) {
        if (std::memcmp(buffer.data() + at, needle.data(), pattern_bytes) != 0) continue;
        MemscanHit hit;
        hit.address = chunk + at;
        hit.region = region;
        // The window never leaves the hit's region: no reads across guard gaps.
        const uint64_t wanted_first = hit.address - uint64_t{options.before_words} * kWord;
        const uint64_t first = hit.address < region.start + uint64_t{options.before_words} * kWord ? region.start : wanted_first;
        const uint64_t wanted_end = hit.address + pattern_bytes + uint64_t{options.after_words} * kWord;
        const uint64_t end = std::min(wanted_end, region.end);
        hit.context_clipped = first != wanted_first || end != wanted_end;
        std::vector<uint64_t> words((end - first) / kWord);
        const ssize_t context_read = read_memory(fd, first, reinterpret_cast<uint8_t*>(words.data()), end - first);
        for (size_t i = 0; i < words.size(); ++i) {
          const uint64_t address = first + i * kWord;
          ContextWord word;
          if (context_read >= static_cast<ssize_t>((i + 1) * kWord)) {
            word = classify_word(space, address, words[i]);
          } else {
            word.address = address;
            word.classification = "unreadable";
          }
          word.in_match = address >= hit.address && address < hit.address + pattern_bytes;
          hit.context.push_back(std::move(word));
        }
        result.hits.push_back(std::move(hit));
        if (result.hits.size() >= options.max_hits) {
          result.stops.push_back("max_hits");
          break;
        }
      }
    }
  }
  ::close(fd);
  return result;
}

nlohmann::json memscan_json(const MemscanResult& result) {
  nlohmann::json hits = nlohmann::json::array();
  for (const MemscanHit& hit : result.hits) {
    nlohmann::json context = nlohmann::json::array();
    for (const ContextWord& word : hit.context) {
      context.push_back({{"address", hex_value(word.address)},
                         {"value", word.value ? nlohmann::json(hex_value(*word.value)) : nlohmann::json(nullptr)},
                         {"in_match", word.in_match},
                         {"classification", word.classification},
                         {"evidence", word.evidence}});
    }
    hits.push_back({{"address", hex_value(hit.address)},
                    {"region", {{"start", hex_value(hit.region.start)},
                                {"end", hex_value(hit.region.end)},
                                {"perms", hit.region.perms},
                                {"path", hit.region.path}}},
                    {"context_clipped", hit.context_clipped},
                    {"context", context}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedRegion& region : result.skipped) {
    skipped.push_back({{"start", hex_value(region.region.start)},
                       {"end", hex_value(region.region.end)},
                       {"path", region.region.path},
                       {"reason", region.reason}});
  }
  return {{"hits", hits},
          {"hit_count", result.hits.size()},
          {"regions_scanned", result.regions_scanned},
          {"bytes_read", result.bytes_read},
          {"skipped_regions", skipped}};
}

}  // namespace xref
