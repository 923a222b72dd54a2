#include "trace/saved/file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <numeric>
#include <streambuf>
#include <string_view>
#include <vector>

#include "bpf_abi.h"
#include "input/input_file.h"
#include "input/untrusted_json.h"
#include "number_parse.h"
#include "render/fetch_text.h"
#include "trace/saved/document.h"

namespace xref {

class TraceBytes {
 public:
  virtual ~TraceBytes() = default;
  // Up to `size` bytes at `offset`; fewer only at the end.
  virtual Result<size_t> read_at(uint64_t offset, char* buffer, size_t size) const = 0;
};

namespace {

constexpr int kSchemaVersion = 1;
constexpr size_t kChunkBytes = size_t{1} << 16;
const char* const kGiveATrace = "give the output of `xref trace --json` or `xref trace --jsonl`";

class FileBytes : public TraceBytes {
 public:
  FileBytes(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Result<size_t> read_at(uint64_t offset, char* buffer, size_t size) const override {
    size_t done = 0;
    while (done < size) {
      const ssize_t got = pread(fd_.get(), buffer + done, size - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        return make_error(ErrorCode::file_error, "cannot read " + path_ + ": " + std::strerror(errno), kGiveATrace);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  UniqueFd fd_;
  std::string path_;
};

class TextBytes : public TraceBytes {
 public:
  explicit TextBytes(std::string text) : text_(std::move(text)) {}
  Result<size_t> read_at(uint64_t offset, char* buffer, size_t size) const override {
    if (offset >= text_.size()) return size_t{0};
    const size_t count = std::min(size, text_.size() - static_cast<size_t>(offset));
    std::memcpy(buffer, text_.data() + offset, count);
    return count;
  }

 private:
  std::string text_;
};

Error bad_input(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message), kGiveATrace); }

Error too_deep(const std::string& where) {
  return make_error(ErrorCode::limit_exceeded, where + " is JSON " + too_deep_text(),
                    "no saved trace nests that deep; " + std::string(kGiveATrace));
}

Error over_cap(const std::string& path, uint64_t cap) {
  return make_error(ErrorCode::limit_exceeded,
                    path + " is larger than the cap of " + std::to_string(cap) + " bytes for saved traces",
                    "set " + std::string(kMaxTraceBytesVariable) + "=BYTES to raise the cap");
}

Result<void> check_schema_version(const nlohmann::json& object) {
  if (!object.contains("schema_version") || object["schema_version"] != kSchemaVersion) {
    return bad_input("unknown schema_version " + object.value("schema_version", nlohmann::json()).dump() +
                     " (this xref reads " + std::to_string(kSchemaVersion) + ")");
  }
  return {};
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

struct Line {
  std::string_view text;  // without its '\n'
  uint64_t offset = 0;
  bool terminated = false;  // a '\n' followed it
};

// Calls `take` for each line of the first `cap` bytes, until it returns
// false; limit_exceeded when the bytes go on past `cap` (a file that grew).
template <typename Take>
Result<void> for_each_line(const TraceBytes& bytes, const std::string& name, uint64_t cap, Take take) {
  std::string pending;  // a line not yet ended
  uint64_t pending_offset = 0;
  std::vector<char> chunk(kChunkBytes);
  for (uint64_t offset = 0;;) {
    auto got = bytes.read_at(offset, chunk.data(), chunk.size());
    if (!got) return got.error();
    if (*got == 0) break;
    if (offset + *got > cap) return over_cap(name, cap);
    std::string_view rest(chunk.data(), *got);
    uint64_t rest_offset = offset;
    offset += *got;
    for (size_t newline; (newline = rest.find('\n')) != std::string_view::npos;) {
      Line line{rest.substr(0, newline), rest_offset, true};
      if (!pending.empty()) {
        pending.append(line.text);
        line.text = pending;
        line.offset = pending_offset;
      }
      if (!take(line)) return {};
      pending.clear();
      rest.remove_prefix(newline + 1);
      rest_offset += newline + 1;
    }
    if (pending.empty()) pending_offset = rest_offset;
    pending.append(rest);
  }
  if (!pending.empty()) take(Line{pending, pending_offset, false});
  return {};
}

// The first `cap` bytes of a source as a stream, for the document walker;
// more than that is a failure (a file that grew since it was opened).
class BytesStreambuf : public std::streambuf {
 public:
  BytesStreambuf(const TraceBytes& bytes, const std::string& name, uint64_t cap)
      : bytes_(bytes), name_(name), cap_(cap), buffer_(kChunkBytes) {}
  const std::optional<Error>& failure() const { return failure_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (failure_) return traits_type::eof();
    // One byte past the cap, to see that there is one.
    const uint64_t left = cap_ - offset_;
    const size_t want = left >= buffer_.size() ? buffer_.size() : static_cast<size_t>(left) + 1;
    auto got = bytes_.read_at(offset_, buffer_.data(), want);
    if (!got) failure_ = got.error();
    if (!got || *got == 0) return traits_type::eof();
    offset_ += *got;
    if (offset_ > cap_) {
      failure_ = over_cap(name_, cap_);
      return traits_type::eof();
    }
    setg(buffer_.data(), buffer_.data(), buffer_.data() + *got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  const TraceBytes& bytes_;
  const std::string& name_;
  uint64_t cap_;
  uint64_t offset_ = 0;
  std::vector<char> buffer_;
  std::optional<Error> failure_;
};

// Walks the source as one document (trace_document.h); the source's own
// failure (unreadable, over the cap) comes first.
Result<DocumentWalk> walk_bytes(const TraceBytes& bytes, const std::string& name, uint64_t cap,
                                const WantedWindow& wanted, const TakeWindow& take) {
  BytesStreambuf buffer(bytes, name, cap);
  std::istream input(&buffer);
  DocumentWalk walk = walk_trace_document(input, wanted, take);
  if (buffer.failure()) return *buffer.failure();
  return walk;
}

}  // namespace

Result<uint64_t> saved_trace_byte_cap() {
  const char* value = std::getenv(kMaxTraceBytesVariable);
  if (value == nullptr || *value == '\0') return kDefaultMaxTraceBytes;
  auto cap = parse_u64(value, kMaxTraceBytesVariable);
  if (!cap || *cap == 0) {
    return make_error(ErrorCode::invalid_argument,
                      std::string(kMaxTraceBytesVariable) + "=" + value + " is not a positive number of bytes",
                      "set it to the largest saved trace to read, e.g. 4294967296, or unset it for 1 GiB");
  }
  return *cap;
}

// Reads a source once: the process and summary kept, every window checked
// and either noted by where its line is (JSONL) or kept (a document).
class SavedTraceReader {
 public:
  SavedTraceReader(SavedTrace& trace, const SavedWindowCheck& check, std::string name, uint64_t cap)
      : trace_(trace), check_(check), name_(std::move(name)), cap_(cap) {}

  Result<void> read() {
    // Walked as one document first; a JSON lines stream stops that walk
    // at its second line, or is one object with a "type".
    Result<void> refused;
    auto walk = walk_bytes(*trace_.bytes_, name_, cap_, [](size_t) { return true; },
                           [&](size_t, nlohmann::json&& window) {
                             refused = add_window(std::move(window), std::nullopt);
                             return refused.ok();
                           });
    if (!walk) return walk.error();
    if (walk->too_deep) return too_deep(walk->top_object ? "the document" : "line 1");
    if (!refused && !walk->has_type) return refused;  // a document's window, refused by `check`
    if (walk->complete && walk->top_object && !walk->has_type) return finish(read_document(walk->members));
    trace_.window_ids_.clear();
    return finish(read_lines());
  }

 private:
  Result<void> finish(Result<void> read) {
    if (!read) return read;
    if (trace_.window_count() == 0) return bad_input("the trace has no windows");
    return {};
  }

  Result<void> read_document(const nlohmann::json& members) {
    if (members.value("operation", "") != "live_trace") return bad_input("not an xref live_trace document");
    if (auto known = check_schema_version(members); !known) return known;
    trace_.process_ = members.value("process", nlohmann::json());
    trace_.summary_ = members.value("summary", nlohmann::json());
    trace_.document_ = true;
    return {};
  }

  Result<void> read_lines() {
    size_t number = 0;
    Result<void> failed;
    auto read = for_each_line(*trace_.bytes_, name_, cap_, [&](const Line& line) {
      ++number;
      if (blank(line.text)) return true;
      UntrustedJson parsed = parse_untrusted_json(line.text);
      if (parsed.failure == UntrustedJson::Failure::too_deep) {
        failed = too_deep("line " + std::to_string(number));
      } else if (!parsed.ok()) {
        failed = bad_input(number == 1 ? "not JSON"
                                       : (line.terminated ? "malformed JSONL line " : "truncated JSONL line ") +
                                             std::to_string(number));
      } else {
        failed = add_line(std::move(parsed.value), number, {line.offset, line.text.size()});
      }
      return failed.ok();
    });
    if (!read) return read;
    return failed;
  }

  // One line of `--jsonl` output: {"type": "header", ...} (the process as
  // known at attach), {"type": "window", ...}, {"type": "heartbeat", ...}
  // (--heartbeat-ms: progress, nothing to keep) or {"type": "summary", ...}
  // (the process after the trace, which wins).
  Result<void> add_line(nlohmann::json line, size_t number, SavedTrace::Span where) {
    const std::string type = line.is_object() ? line.value("type", "") : "";
    if (type == "header") {
      if (auto known = check_schema_version(line); !known) return known;
      if (trace_.process_.is_null()) trace_.process_ = line.value("process", nlohmann::json());
    } else if (type == "window" && line.contains("window") && line["window"].is_object()) {
      return add_window(std::move(line["window"]), where);
    } else if (type == "heartbeat") {
    } else if (type == "summary") {
      trace_.process_ = line.value("process", nlohmann::json());
      trace_.summary_ = line.value("summary", nlohmann::json());
    } else {
      return bad_input("line " + std::to_string(number) + " is not an xref live_trace JSONL line");
    }
    return {};
  }

  Result<void> add_window(nlohmann::json window, std::optional<SavedTrace::Span> where) {
    if (check_) {
      if (auto checked = check_(window, trace_.window_ids_.size()); !checked) return checked;
    }
    const auto id = window.is_object() ? window.find("window_id") : window.end();
    trace_.window_ids_.push_back(window.is_object() && id != window.end() && id->is_number_unsigned()
                                     ? std::optional<uint64_t>(id->get<uint64_t>())
                                     : std::nullopt);
    if (where) trace_.window_lines_.push_back(*where);
    return {};
  }

  SavedTrace& trace_;
  const SavedWindowCheck& check_;
  std::string name_;
  uint64_t cap_;
};

Result<SavedTrace> SavedTrace::open(const std::string& path, const SavedWindowCheck& check) {
  auto cap = saved_trace_byte_cap();
  if (!cap) return cap.error();
  return open(path, check, *cap);
}

Result<SavedTrace> SavedTrace::open(const std::string& path, const SavedWindowCheck& check, uint64_t max_bytes) {
  // With the user's rights under sudo (input_file.h).
  auto file = open_regular_file(path, "");
  if (!file) {
    Error error = file.error();
    if (error.code == ErrorCode::file_error) {
      error.hint = "give a file written by `xref trace --json` or `xref trace --jsonl`";
    }
    return error;
  }
  SavedTrace trace;
  trace.identity_ = file->identity;
  trace.bytes_ = std::make_shared<FileBytes>(std::move(file->fd), path);
  trace.cap_ = max_bytes;
  if (file->size > max_bytes) return over_cap(path, max_bytes);
  SavedTraceReader reader(trace, check, path, max_bytes);
  if (auto read = reader.read(); !read) return read.error();
  return trace;
}

Result<SavedTrace> SavedTrace::parse(std::string text, const SavedWindowCheck& check) {
  SavedTrace trace;
  const uint64_t size = text.size();
  trace.bytes_ = std::make_shared<TextBytes>(std::move(text));
  trace.cap_ = size;
  SavedTraceReader reader(trace, check, "the text", size);
  if (auto read = reader.read(); !read) return read.error();
  return trace;
}

std::optional<size_t> SavedTrace::find_window(uint64_t id) const {
  for (size_t index = 0; index < window_ids_.size(); ++index) {
    if (window_ids_[index] == id) return index;
  }
  return std::nullopt;
}

std::vector<size_t> SavedTrace::every_window() const {
  std::vector<size_t> every(window_count());
  std::iota(every.begin(), every.end(), size_t{0});
  return every;
}

Result<nlohmann::json> SavedTrace::window(size_t index) const {
  nlohmann::json found;
  auto read = read_windows({index}, [&](size_t, nlohmann::json&& window) -> Result<void> {
    found = std::move(window);
    return {};
  });
  if (!read) return read.error();
  return found;
}

namespace {

Error changed_while_read() {
  return make_error(ErrorCode::file_error, "the saved trace changed while it was being read",
                    "read a copy that nothing writes to");
}

}  // namespace

Result<void> SavedTrace::read_windows(const std::vector<size_t>& indices, const WindowVisit& visit) const {
  if (indices.empty()) return {};
  if (indices.back() >= window_count()) return make_error(ErrorCode::internal, "no such window in the saved trace");
  if (document_) {
    // One walk, each wanted window built in turn, stopped after the last.
    size_t next = 0;
    Result<void> visited;
    auto walk = walk_bytes(*bytes_, "the saved trace", cap_, [&](size_t index) { return index == indices[next]; },
                           [&](size_t index, nlohmann::json&& window) {
                             visited = visit(index, std::move(window));
                             return visited.ok() && ++next < indices.size();
                           });
    if (!walk) return walk.error();
    if (!visited) return visited;
    if (next < indices.size()) return changed_while_read();
    return {};
  }
  for (size_t index : indices) {
    const Span& where = window_lines_.at(index);
    std::string text(where.length, '\0');
    auto got = bytes_->read_at(where.offset, text.data(), text.size());
    if (!got) return got.error();
    UntrustedJson parsed = parse_untrusted_json(text);
    if (*got != text.size() || !parsed.ok() || !parsed.value.is_object() ||
        parsed.value.value("type", "") != "window" || !parsed.value.contains("window")) {
      return changed_while_read();
    }
    if (auto visited = visit(index, std::move(parsed.value["window"])); !visited) return visited;
  }
  return {};
}

namespace {

Result<TraceFile> in_memory(Result<SavedTrace> trace) {
  if (!trace) return trace.error();
  TraceFile file{trace->process(), {}, trace->summary()};
  auto read = trace->read_windows(trace->every_window(), [&](size_t, nlohmann::json&& window) -> Result<void> {
    file.windows.push_back(std::move(window));
    return {};
  });
  if (!read) return read.error();
  return file;
}

}  // namespace

Result<TraceFile> parse_trace_file(const std::string& text) { return in_memory(SavedTrace::parse(text)); }

Result<TraceFile> load_trace_file(const std::string& path) { return in_memory(SavedTrace::open(path)); }

const nlohmann::json* window_with_id(const TraceFile& file, uint64_t id) {
  for (const auto& window : file.windows) {
    if (window.is_object() && window.contains("window_id") && window["window_id"].is_number_integer() &&
        window["window_id"] == id) {
      return &window;
    }
  }
  return nullptr;
}

std::string window_ids_text(const std::vector<std::optional<uint64_t>>& ids) {
  std::string text;
  for (size_t index = 0; index < ids.size(); ++index) {
    if (index == 10) return text + ", ...";
    text += (text.empty() ? "" : ", ") + (ids[index] ? std::to_string(*ids[index]) : std::string("null"));
  }
  return text;
}

std::string saved_text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::string saved_string_fetch_problem(const nlohmann::json& fetch) {
  if (!fetch.is_object() || !fetch.contains("string")) return "";
  const std::string bound = std::to_string(XREF_STRING_MAX_BYTES);
  const nlohmann::json& string = fetch["string"];
  if (!string.is_string() || string.get_ref<const std::string&>().size() > 3 * XREF_STRING_MAX_BYTES) {
    return "a fetched string is not a string of at most " + bound + " characters";
  }
  const auto length = fetch.find("length");
  if (length == fetch.end() || !length->is_number_integer() || length->get<int64_t>() < 0 ||
      length->get<int64_t>() > XREF_STRING_MAX_BYTES) {
    return "a fetched string's length is not a number from 0 to " + bound;
  }
  if (!fetch.contains("truncated") || !fetch["truncated"].is_boolean()) {
    return "a fetched string's truncated is not true or false";
  }
  return "";
}

nlohmann::json saved_fetch_value(const nlohmann::json& fetch) {
  // A :string fetch as its text shows it: "set", or "xxx…" (cut at 64 bytes).
  if (const auto string = fetch.find("string"); string != fetch.end() && string->is_string()) {
    const auto length = fetch.find("length");
    const bool counted = length != fetch.end() && length->is_number_integer() && length->get<int64_t>() > 0;
    return render::string_text(string->get<std::string>(), fetch.value("truncated", false),
                               counted ? length->get<uint64_t>() : 0);
  }
  if (fetch.contains("signed_value")) return fetch["signed_value"];
  if (fetch.contains("value") && !fetch["value"].is_null()) return fetch["value"];
  const auto error = fetch.find("error");
  return "<unreadable: " + (error != fetch.end() && error->is_string() ? error->get<std::string>() : "?") + ">";
}

}  // namespace xref
