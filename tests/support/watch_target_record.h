// watch_target's ground truth, read (tests/targets/watch_target.c says what
// it writes): its startup lines (`obj NAME 0xADDR SIZE`, `thread workerW
// TID`, `pid N`, `ready`), its exit lines (`thread late TID`, `final NAME
// HEX`) and its --record file (`TID SEQ OBJ OFFSET LEN OLD_HEX NEW_HEX FUNC
// [via memcpy|via memset|kernel read]`), and the one order of all threads'
// writes the record proves: g_total's value only grows and every lock
// section of a round starts with a write to it, so its values order the
// sections. Replaying the writes in that order checks every OLD against the
// bytes before and gives each write its live address (`moving` moves).
//
// Every parse error throws std::runtime_error naming the line.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace xref::test::watch_target {

using Bytes = std::vector<uint8_t>;

// The objects in the order the target prints them.
inline const std::vector<std::string>& object_names() {
  static const std::vector<std::string> names = {"g_total", "g_counts", "g_flag", "g_config",
                                                 "buf",     "moving",   "moving_slot"};
  return names;
}

// The `moving` block's layout.
constexpr uint64_t kMovingLengthOffset = 16;
constexpr uint64_t kMovingWritesOffset = 24;
constexpr uint64_t kMovingDataOffset = 32;

[[noreturn]] inline void parse_error(const std::string& what, const std::string& line) {
  throw std::runtime_error(what + ": '" + line + "'");
}

inline std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word) words.push_back(word);
  return words;
}

inline bool is_decimal(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos && (word == "0" || word[0] != '0');
}

// "0a1b..." (two lowercase digits per byte, memory order) -> bytes.
inline std::optional<Bytes> bytes_of_hex(const std::string& hex) {
  if (hex.size() % 2 != 0 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  Bytes bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return bytes;
}

inline std::string hex_of(const Bytes& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : bytes) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

// Little-endian value of up to 8 bytes (what the target sees as an integer).
inline uint64_t value_of(const Bytes& bytes) {
  uint64_t value = 0;
  for (size_t i = std::min<size_t>(bytes.size(), 8); i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

// --- startup and exit lines ------------------------------------------------------

struct Object {
  std::string name;
  uint64_t address = 0;  // live; `moving`: its first block
  uint64_t size = 0;     // `moving`: its first capacity
};

struct Startup {
  std::vector<Object> objects;          // in object_names() order
  std::map<std::string, long> threads;  // "worker0" -> TID
  long pid = 0;

  const Object& object(const std::string& name) const {
    for (const auto& object : objects) {
      if (object.name == name) return object;
    }
    throw std::runtime_error("watch_target printed no object " + name);
  }
};

// The lines before "ready" (without it), in order: obj lines for every
// object, thread lines, then "pid N".
inline Startup parse_startup(const std::vector<std::string>& lines) {
  Startup startup;
  size_t i = 0;
  for (const auto& name : object_names()) {
    if (i >= lines.size()) throw std::runtime_error("watch_target: startup lines end before obj " + name);
    const auto words = words_of(lines[i]);
    if (words.size() != 4 || words[0] != "obj" || words[1] != name || words[2].rfind("0x", 0) != 0 ||
        words[2].size() < 3 || words[2].find_first_not_of("0123456789abcdef", 2) != std::string::npos ||
        !is_decimal(words[3])) {
      parse_error("expected 'obj " + name + " 0xADDR SIZE'", lines[i]);
    }
    startup.objects.push_back(Object{name, std::stoull(words[2], nullptr, 16), std::stoull(words[3])});
    ++i;
  }
  for (; i < lines.size() && lines[i].rfind("thread ", 0) == 0; ++i) {
    const auto words = words_of(lines[i]);
    const std::string expected_name = "worker" + std::to_string(startup.threads.size());
    if (words.size() != 3 || words[1] != expected_name || !is_decimal(words[2])) {
      parse_error("expected 'thread " + expected_name + " TID'", lines[i]);
    }
    startup.threads[words[1]] = std::stol(words[2]);
  }
  if (i + 1 != lines.size()) throw std::runtime_error("watch_target: expected 'pid N' as the last line before ready");
  const auto words = words_of(lines[i]);
  if (words.size() != 2 || words[0] != "pid" || !is_decimal(words[1])) parse_error("expected 'pid N'", lines[i]);
  startup.pid = std::stol(words[1]);
  return startup;
}

struct Exit {
  std::optional<long> late_tid;       // "thread late TID"
  std::map<std::string, Bytes> finals;  // every object's bytes at exit
};

// The lines after "ready": an optional "thread late TID", then "final NAME
// HEX" for every object in order.
inline Exit parse_exit(const std::vector<std::string>& lines) {
  Exit exit;
  size_t i = 0;
  if (i < lines.size() && lines[i].rfind("thread ", 0) == 0) {
    const auto words = words_of(lines[i]);
    if (words.size() != 3 || words[1] != "late" || !is_decimal(words[2])) parse_error("expected 'thread late TID'", lines[i]);
    exit.late_tid = std::stol(words[2]);
    ++i;
  }
  for (const auto& name : object_names()) {
    if (i >= lines.size()) throw std::runtime_error("watch_target: exit lines end before final " + name);
    const auto words = words_of(lines[i]);
    std::optional<Bytes> bytes;
    if (words.size() == 3) bytes = bytes_of_hex(words[2]);
    if (words.size() != 3 || words[0] != "final" || words[1] != name || !bytes) {
      parse_error("expected 'final " + name + " HEX'", lines[i]);
    }
    exit.finals[name] = *bytes;
    ++i;
  }
  if (i != lines.size()) parse_error("unexpected line after the final lines", lines[i]);
  return exit;
}

// --- the record --------------------------------------------------------------------

struct Write {
  size_t line_number = 0;  // 1-based, in the record file
  std::string text;
  long tid = 0;
  uint64_t seq = 0;  // 1, 2, 3... per thread
  std::string object;
  uint64_t offset = 0;
  uint64_t length = 0;
  Bytes old_bytes, new_bytes;
  std::string function;  // the writer: the function whose code stores, or that calls memcpy/memset/read
  std::string how;       // "", "via memcpy", "via memset" or "kernel read"

  bool changed() const { return old_bytes != new_bytes; }
  bool by_contract() const { return how == "via memcpy" || how == "via memset"; }
  bool by_kernel() const { return how == "kernel read"; }
  uint64_t old_value() const { return value_of(old_bytes); }
  uint64_t new_value() const { return value_of(new_bytes); }
  std::string where() const { return "record line " + std::to_string(line_number) + " '" + text + "'"; }
};

// The part of `write` inside OBJECT's bytes [offset, offset + length) (what a
// watch of that range sees), or nullopt when it does not touch them.
inline std::optional<Write> clip(const Write& write, const std::string& object, uint64_t offset, uint64_t length) {
  const uint64_t start = std::max(write.offset, offset);
  const uint64_t end = std::min(write.offset + write.length, offset + length);
  if (write.object != object || start >= end) return std::nullopt;
  Write part = write;
  part.offset = start;
  part.length = end - start;
  part.old_bytes.assign(write.old_bytes.begin() + (start - write.offset), write.old_bytes.begin() + (end - write.offset));
  part.new_bytes.assign(write.new_bytes.begin() + (start - write.offset), write.new_bytes.begin() + (end - write.offset));
  return part;
}

inline Write parse_write(const std::string& line, size_t line_number) {
  Write write;
  write.line_number = line_number;
  write.text = line;
  const auto words = words_of(line);
  const auto bad = [&](const std::string& what) { parse_error("record line " + std::to_string(line_number) + ": " + what, line); };
  if (words.size() < 8 || words.size() > 10 || line.find("  ") != std::string::npos) bad("malformed");
  for (size_t i : {0, 1, 3, 4}) {
    if (!is_decimal(words[i])) bad("TID, SEQ, OFFSET and LEN must be decimal");
  }
  write.tid = std::stol(words[0]);
  write.seq = std::stoull(words[1]);
  write.object = words[2];
  if (std::find(object_names().begin(), object_names().end(), write.object) == object_names().end()) bad("no such object");
  write.offset = std::stoull(words[3]);
  write.length = std::stoull(words[4]);
  const auto old_bytes = bytes_of_hex(words[5]);
  const auto new_bytes = bytes_of_hex(words[6]);
  if (!old_bytes || !new_bytes || old_bytes->size() != write.length || new_bytes->size() != write.length ||
      write.length == 0) {
    bad("OLD_HEX and NEW_HEX must be LEN bytes of lowercase hex");
  }
  write.old_bytes = *old_bytes;
  write.new_bytes = *new_bytes;
  write.function = words[7];
  for (size_t i = 8; i < words.size(); ++i) write.how += (i > 8 ? " " : "") + words[i];
  if (!write.how.empty() && write.how != "via memcpy" && write.how != "via memset" && write.how != "kernel read") {
    bad("the suffix must be 'via memcpy', 'via memset' or 'kernel read'");
  }
  return write;
}

// Every line of the record file (missing file: no writes).
inline std::vector<Write> read_record(const std::string& path) {
  std::ifstream file(path);
  std::vector<Write> writes;
  if (!file.good()) return writes;
  std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!content.empty() && content.back() != '\n') throw std::runtime_error(path + ": the record does not end with a newline");
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) writes.push_back(parse_write(line, writes.size() + 1));
  return writes;
}

// Each thread's writes in SEQ order; throws unless every thread's SEQ runs 1, 2, 3...
// in file order (a thread appends its own rounds in order).
inline std::map<long, std::vector<Write>> by_thread(const std::vector<Write>& writes) {
  std::map<long, std::vector<Write>> threads;
  for (const auto& write : writes) {
    auto& list = threads[write.tid];
    if (write.seq != list.size() + 1) {
      throw std::runtime_error(write.where() + ": expected SEQ " + std::to_string(list.size() + 1) + " of thread " +
                               std::to_string(write.tid));
    }
    list.push_back(write);
  }
  return threads;
}

// --- the global order ----------------------------------------------------------------

// Indexes into `writes` in the order they happened, as far as the record can
// tell: g_total's changing writes sorted by value (each one's OLD must be the
// previous one's NEW, and NEW > OLD); an unchanging g_total write (a failed
// cmpxchg) right after the write that produced its value; every other write
// after its thread's latest g_total write before it, in SEQ order. Throws
// when the record contradicts that order.
inline std::vector<size_t> global_order(const std::vector<Write>& writes) {
  by_thread(writes);  // SEQ 1, 2, 3... per thread
  std::vector<size_t> changing;
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].object == "g_total" && writes[i].changed()) changing.push_back(i);
  }
  std::sort(changing.begin(), changing.end(),
            [&](size_t a, size_t b) { return writes[a].old_value() < writes[b].old_value(); });
  std::map<uint64_t, uint64_t> state_of_value;  // g_total value -> its state number
  for (size_t k = 0; k < changing.size(); ++k) {
    const Write& write = writes[changing[k]];
    if (write.length != 8 || write.offset != 0) throw std::runtime_error(write.where() + ": g_total writes are 8 bytes");
    if (write.new_value() <= write.old_value()) throw std::runtime_error(write.where() + ": g_total must only grow");
    if (k == 0) state_of_value[write.old_value()] = 0;
    if (k > 0 && write.old_value() != writes[changing[k - 1]].new_value()) {
      throw std::runtime_error(write.where() + ": no g_total write left " + std::to_string(write.old_value()) +
                               " (the previous value is " + std::to_string(writes[changing[k - 1]].new_value()) + ")");
    }
    state_of_value[write.new_value()] = k + 1;
  }
  // Key 2s: the write that produced state s; 2s + 1: after it.
  std::vector<uint64_t> key(writes.size(), 0);
  for (size_t k = 0; k < changing.size(); ++k) key[changing[k]] = 2 * (k + 1);
  std::map<long, uint64_t> anchor;  // thread -> key of its latest g_total write
  std::map<long, uint64_t> last_total_key;
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& write = writes[i];
    if (write.object == "g_total") {
      if (!write.changed()) {
        const auto state = state_of_value.find(write.old_value());
        if (state == state_of_value.end()) {
          throw std::runtime_error(write.where() + ": g_total never held " + std::to_string(write.old_value()));
        }
        key[i] = 2 * state->second + 1;
      }
      const auto previous = last_total_key.find(write.tid);
      if (previous != last_total_key.end() && key[i] < previous->second + (write.changed() ? 1 : 0)) {
        throw std::runtime_error(write.where() + ": this thread's g_total writes are out of g_total's order");
      }
      last_total_key[write.tid] = key[i];
      anchor[write.tid] = key[i];
    } else {
      key[i] = anchor.count(write.tid) ? anchor[write.tid] : 0;
    }
  }
  std::vector<size_t> order(writes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(key[a], writes[a].tid, writes[a].seq) < std::make_tuple(key[b], writes[b].tid, writes[b].seq);
  });
  return order;
}

// --- replay --------------------------------------------------------------------------

// An object's bytes as the replay knows them: nullopt until a write's OLD
// (or NEW) shows them.
using KnownBytes = std::vector<std::optional<uint8_t>>;

struct Replay {
  std::vector<size_t> order;               // global_order(writes)
  std::vector<uint64_t> address;           // per write (index into writes): the live address of its first byte
  std::vector<uint32_t> generation;        // per write: 0 for the first `moving` block, +1 per move
  std::map<std::string, KnownBytes> bytes;  // every object at the end
  uint64_t moving_address = 0;             // the last block
  uint32_t moves = 0;                      // moving_slot writes that changed the pointer
};

// Replays `writes` in global order from the startup objects: every OLD must
// equal the bytes known before it. realloc keeps a moved block's bytes (its
// capacity only grows); bytes beyond them are unknown until written.
inline Replay replay(const Startup& startup, const std::vector<Write>& writes) {
  Replay result;
  result.order = global_order(writes);
  result.address.assign(writes.size(), 0);
  result.generation.assign(writes.size(), 0);
  for (const auto& object : startup.objects) result.bytes[object.name] = KnownBytes(object.size);
  result.moving_address = startup.object("moving").address;
  for (size_t index : result.order) {
    const Write& write = writes[index];
    KnownBytes& known = result.bytes[write.object];
    const bool moving = write.object == "moving";
    if (!moving && write.offset + write.length > known.size()) {
      throw std::runtime_error(write.where() + ": beyond the object's " + std::to_string(known.size()) + " bytes");
    }
    if (moving && write.offset + write.length > known.size()) known.resize(write.offset + write.length);
    for (uint64_t i = 0; i < write.length; ++i) {
      auto& byte = known[write.offset + i];
      if (byte && *byte != write.old_bytes[i]) {
        throw std::runtime_error(write.where() + ": OLD byte " + std::to_string(i) + " is " +
                                 hex_of({write.old_bytes[i]}) + ", but the writes before it left " + hex_of({*byte}));
      }
      byte = write.new_bytes[i];
    }
    result.address[index] = (moving ? result.moving_address : startup.object(write.object).address) + write.offset;
    result.generation[index] = moving ? result.moves : 0;
    if (write.object == "moving_slot" && write.changed()) {
      result.moving_address = write.new_value();
      ++result.moves;
    }
  }
  return result;
}

}  // namespace xref::test::watch_target
