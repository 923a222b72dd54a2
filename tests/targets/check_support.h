// What the target checkers (trace_target_check, rust_target_check) share:
// failing a check, reading the record a target writes, and grouping its
// lines per (thread, request).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace target_check {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& message) { throw Failure(message); }

inline void require(bool condition, const std::string& message) {
  if (!condition) fail(message);
}

inline std::string hex(uint64_t value) {
  char text[32];
  snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

inline std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word) words.push_back(word);
  return words;
}

struct Event {
  size_t line_number = 0;
  std::string text;
  long tid = 0;
  uint64_t request = 0;
  char kind = 0;
  std::string function;
  std::vector<uint64_t> values;
  std::string body;  // the line without "TID REQ_ID "
};

inline bool is_decimal(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos &&
         (word == "0" || word[0] != '0');
}

inline bool is_hex(const std::string& word) {
  return word.size() > 2 && word.rfind("0x", 0) == 0 &&
         word.find_first_not_of("0123456789abcdef", 2) == std::string::npos && (word == "0x0" || word[2] != '0');
}

struct Block {
  long tid;
  uint64_t request;
  std::vector<Event> events;
};

// Consecutive lines of one (TID, REQ_ID): one request, since each request is
// appended with a single write().
inline std::vector<Block> blocks_of(const std::vector<Event>& events) {
  std::vector<Block> blocks;
  for (const auto& event : events) {
    if (blocks.empty() || blocks.back().tid != event.tid || blocks.back().request != event.request) {
      blocks.push_back(Block{event.tid, event.request, {}});
    }
    blocks.back().events.push_back(event);
  }
  return blocks;
}

}  // namespace target_check
