// Reading a .xprof back (docs/xprof.md, "Reading safely"): the file is
// input from anywhere, so it is opened as the user (input_file.h), bounded
// in size and nesting, and every field and index is checked before a report
// trusts it. The first thing wrong is reported with where it is
// ("stacks[4].locations[1]"), as one line.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "input/input_file.h"
#include "input/untrusted_json.h"
#include "number_parse.h"
#include "xprof/file.h"

namespace xref {
namespace {

constexpr uint64_t kDefaultMaxXprofBytes = uint64_t{1} << 30;
constexpr const char* kMaxXprofBytesVariable = "XREF_MAX_XPROF_BYTES";
const char* const kCaptureAgain = "give a file written by `xref profile --out`, whole; capture again if it was cut short";

Error format_error(const std::string& message) { return make_error(ErrorCode::capture_format, message, kCaptureAgain); }

Result<uint64_t> byte_cap() {
  const char* value = std::getenv(kMaxXprofBytesVariable);
  if (value == nullptr || *value == '\0') return kDefaultMaxXprofBytes;
  auto cap = parse_u64(value, kMaxXprofBytesVariable);
  if (!cap || *cap == 0) {
    return make_error(ErrorCode::invalid_argument,
                      std::string(kMaxXprofBytesVariable) + "=" + value + " is not a positive number of bytes",
                      "set it to the largest capture to read, e.g. 4294967296, or unset it for 1 GiB");
  }
  return *cap;
}

// Where a syntax error is, without building the value (a SAX parse builds
// nothing, so no nesting can hurt): the byte offset of the failure.
struct ErrorPosition : nlohmann::json_sax<nlohmann::json> {
  size_t byte = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    byte = position;
    return false;
  }
};

// A whole number of 0 or more: parsed text gives unsigned numbers, a
// document built in memory may hold them signed.
bool whole(const nlohmann::json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

// Checks fields as they are read. The first problem is kept (with where it
// is) and later reads give zero values, so each table is read straight
// through and the error checked once after it.
class Fields {
 public:
  const std::optional<Error>& error() const { return error_; }
  bool failed() const { return error_.has_value(); }

  void fail(const std::string& message) {
    if (!error_) error_ = format_error(message);
  }

  const nlohmann::json& need(const nlohmann::json& object, const char* key, const std::string& where) {
    static const nlohmann::json kNull;
    if (!object.is_object()) {
      fail(where + " is not an object");
      return kNull;
    }
    const auto found = object.find(key);
    if (found == object.end()) {
      fail(where + "." + key + " is missing");
      return kNull;
    }
    return *found;
  }

  const nlohmann::json& object(const nlohmann::json& parent, const char* key, const std::string& where) {
    const nlohmann::json& value = need(parent, key, where);
    if (!failed() && !value.is_object()) fail(where + "." + key + " is not an object");
    return value;
  }

  const nlohmann::json& array(const nlohmann::json& parent, const char* key, const std::string& where) {
    static const nlohmann::json kEmpty = nlohmann::json::array();
    const nlohmann::json& value = need(parent, key, where);
    if (failed()) return kEmpty;
    if (!value.is_array()) {
      fail(where + "." + key + " is not an array");
      return kEmpty;
    }
    return value;
  }

  uint64_t number(const nlohmann::json& object, const char* key, const std::string& where) {
    const nlohmann::json& value = need(object, key, where);
    if (failed()) return 0;
    if (!whole(value)) {
      fail(where + "." + key + " is not a whole number of 0 or more");
      return 0;
    }
    return value.get<uint64_t>();
  }

  uint32_t number32(const nlohmann::json& object, const char* key, const std::string& where) {
    const uint64_t value = number(object, key, where);
    if (value > UINT32_MAX) fail(where + "." + key + " is larger than 32 bits");
    return static_cast<uint32_t>(value);
  }

  // A 64-bit address: "0x..." (json.md).
  uint64_t address(const nlohmann::json& object, const char* key, const std::string& where) {
    const nlohmann::json& value = need(object, key, where);
    if (failed()) return 0;
    const std::string* text = value.is_string() ? value.get_ptr<const std::string*>() : nullptr;
    auto parsed = text != nullptr && text->rfind("0x", 0) == 0 ? parse_u64(*text, key) : Result<uint64_t>(Error{});
    if (!parsed) {
      fail(where + "." + key + " is not a hex address string (\"0x1139\")");
      return 0;
    }
    return *parsed;
  }

  std::string text(const nlohmann::json& object, const char* key, const std::string& where, bool null_ok = false) {
    const nlohmann::json& value = need(object, key, where);
    if (failed() || (null_ok && value.is_null())) return "";
    if (!value.is_string()) {
      fail(where + "." + key + " is not a string");
      return "";
    }
    return value.get<std::string>();
  }

  bool flag(const nlohmann::json& object, const char* key, const std::string& where) {
    const nlohmann::json& value = need(object, key, where);
    if (failed()) return false;
    if (!value.is_boolean()) {
      fail(where + "." + key + " is not true or false");
      return false;
    }
    return value.get<bool>();
  }

  // An index into a table of `bound` rows named `table`; null allowed when
  // `null_ok`.
  std::optional<uint32_t> index(const nlohmann::json& value, const std::string& where, size_t bound,
                                const char* table, bool null_ok) {
    if (failed()) return std::nullopt;
    if (null_ok && value.is_null()) return std::nullopt;
    if (!whole(value)) {
      fail(where + " is not an index" + (null_ok ? " or null" : ""));
      return std::nullopt;
    }
    const uint64_t index = value.get<uint64_t>();
    if (index >= bound) {
      fail(where + " = " + std::to_string(index) + " is out of range (" + std::to_string(bound) + " " + table + ")");
      return std::nullopt;
    }
    return static_cast<uint32_t>(index);
  }

 private:
  std::optional<Error> error_;
};

std::string at(const char* table, size_t index) { return std::string(table) + "[" + std::to_string(index) + "]"; }

void read_capture(Fields& fields, const nlohmann::json& document, ProfileCaptureParameters& capture) {
  const nlohmann::json& object = fields.object(document, "capture", "the document");
  const std::string where = "capture";
  capture.event = fields.text(object, "event", where);
  capture.event_reason = fields.text(object, "event_reason", where);
  capture.frequency_hz = fields.number(object, "frequency_hz", where);
  capture.period_ns = fields.number(object, "period_ns", where);
  capture.callers = fields.text(object, "callers", where);
  capture.max_frames = fields.number32(object, "max_frames", where);
  capture.started_unix_ns = fields.number(object, "started_unix_ns", where);
  capture.duration_ns = fields.number(object, "duration_ns", where);
  const nlohmann::json& threads = fields.array(object, "threads_requested", where);
  for (size_t index = 0; index < threads.size() && !fields.failed(); ++index) {
    if (!whole(threads[index]) || threads[index].get<uint64_t>() > UINT32_MAX) {
      fields.fail(where + ".threads_requested[" + std::to_string(index) + "] is not a thread id");
    } else {
      capture.threads_requested.push_back(threads[index].get<uint32_t>());
    }
  }
  capture.ended_by = fields.text(object, "ended_by", where);
}

void read_modules(Fields& fields, const nlohmann::json& document, std::vector<ProfileModule>& modules) {
  const nlohmann::json& rows = fields.array(document, "modules", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("modules", index);
    ProfileModule module;
    module.path = fields.text(row, "path", where);
    module.build_id = fields.text(row, "build_id", where);
    module.load_bias = fields.address(row, "load_bias", where);
    const nlohmann::json& mappings = fields.array(row, "mappings", where);
    for (size_t number = 0; number < mappings.size() && !fields.failed(); ++number) {
      const std::string mapping_where = where + ".mappings[" + std::to_string(number) + "]";
      ProfileMapping mapping;
      mapping.start = fields.address(mappings[number], "start", mapping_where);
      mapping.end = fields.address(mappings[number], "end", mapping_where);
      mapping.file_offset = fields.address(mappings[number], "file_offset", mapping_where);
      module.mappings.push_back(mapping);
    }
    module.unwind_table = fields.text(row, "unwind_table", where);
    module.unwind_rows = fields.number32(row, "unwind_rows", where);
    module.unwind_error = fields.text(row, "unwind_error", where, true);
    modules.push_back(std::move(module));
  }
}

void read_functions(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& rows = fields.array(document, "functions", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("functions", index);
    ProfileFunction function;
    const auto module = fields.index(fields.need(row, "module", where), where + ".module", profile.modules.size(),
                                     "modules", true);
    function.module = module.value_or(kNoModule);
    function.name = fields.text(row, "name", where);
    function.raw_name = fields.text(row, "raw_name", where);
    function.start = fields.address(row, "start", where);
    function.size = fields.number(row, "size", where);
    profile.functions.push_back(std::move(function));
  }
}

void read_locations(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& rows = fields.array(document, "locations", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("locations", index);
    ProfileLocation location;
    location.module = fields.index(fields.need(row, "module", where), where + ".module", profile.modules.size(),
                                   "modules", true)
                          .value_or(kNoModule);
    location.address = fields.address(row, "address", where);
    location.return_address = fields.flag(row, "return_address", where);
    location.function = fields.index(fields.need(row, "function", where), where + ".function",
                                     profile.functions.size(), "functions", true);
    profile.locations.push_back(location);
  }
}

void read_stacks(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& rows = fields.array(document, "stacks", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("stacks", index);
    ProfileStack stack;
    const nlohmann::json& locations = fields.array(row, "locations", where);
    if (!fields.failed() && locations.empty()) fields.fail(where + ".locations is empty");
    for (size_t number = 0; number < locations.size() && !fields.failed(); ++number) {
      const auto location = fields.index(locations[number], where + ".locations[" + std::to_string(number) + "]",
                                         profile.locations.size(), "locations", false);
      if (location) stack.locations.push_back(*location);
    }
    const std::string end = fields.text(row, "end", where);
    if (auto known = stack_end_from_name(end)) {
      stack.end = *known;
    } else if (!fields.failed()) {
      fields.fail(where + ".end \"" + end + "\" is not a way a stack ends (docs/xprof.md)");
    }
    stack.in_kernel = fields.flag(row, "in_kernel", where);
    profile.stacks.push_back(std::move(stack));
  }
}

void read_samples(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& rows = fields.array(document, "samples", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("samples", index);
    ProfileSample sample;
    sample.stack = fields.index(fields.need(row, "stack", where), where + ".stack", profile.stacks.size(), "stacks",
                                false)
                       .value_or(0);
    sample.tid = fields.number32(row, "tid", where);
    sample.count = fields.number(row, "count", where);
    profile.samples.push_back(sample);
  }
}

void read_threads(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& rows = fields.array(document, "threads", "the document");
  for (size_t index = 0; index < rows.size() && !fields.failed(); ++index) {
    const nlohmann::json& row = rows[index];
    const std::string where = at("threads", index);
    ProfileThread thread;
    thread.tid = fields.number32(row, "tid", where);
    thread.name = fields.text(row, "name", where);
    thread.samples = fields.number(row, "samples", where);
    thread.cpu_ns = fields.number(row, "cpu_ns", where);
    thread.started_during_capture = fields.flag(row, "started_during_capture", where);
    thread.exited_during_capture = fields.flag(row, "exited_during_capture", where);
    profile.threads.push_back(std::move(thread));
  }
}

void read_counts(Fields& fields, const nlohmann::json& document, Profile& profile) {
  const nlohmann::json& losses = fields.object(document, "losses", "the document");
  profile.losses.throttled = fields.number(losses, "throttled", "losses");
  profile.losses.stacks_full = fields.number(losses, "stacks_full", "losses");
  profile.losses.counts_full = fields.number(losses, "counts_full", "losses");
  profile.losses.requests_lost = fields.number(losses, "requests_lost", "losses");
  profile.losses.other_process = fields.number(losses, "other_process", "losses");
  const nlohmann::json& ends = fields.object(document, "stack_ends", "the document");
  if (!fields.failed()) {
    for (const auto& [name, value] : ends.items()) {
      if (!stack_end_from_name(name)) {
        fields.fail("stack_ends." + name + " is not a way a stack ends (docs/xprof.md)");
      }
      profile.stack_ends[name] = fields.number(ends, name.c_str(), "stack_ends");
    }
  }
  profile.frames_walked = fields.number(document, "frames_walked", "the document");
  const nlohmann::json& warnings = fields.array(document, "warnings", "the document");
  for (size_t index = 0; index < warnings.size() && !fields.failed(); ++index) {
    if (!warnings[index].is_string()) fields.fail(at("warnings", index) + " is not a string");
    else profile.warnings.push_back(warnings[index].get<std::string>());
  }
}

}  // namespace

Result<Profile> profile_from_json(const nlohmann::json& document) {
  if (!document.is_object() || document.value("format", nlohmann::json()) != "xprof") {
    return format_error("not a .xprof capture (its \"format\" is not \"xprof\")");
  }
  const nlohmann::json version = document.value("schema_version", nlohmann::json());
  if (version != kXprofSchemaVersion) {
    return format_error("schema_version " + (version.is_null() ? std::string("missing") : version.dump()) +
                        " is not one this xref reads (it reads " + std::to_string(kXprofSchemaVersion) + ")");
  }
  Fields fields;
  Profile profile;
  const nlohmann::json& process = fields.need(document, "process", "the document");
  if (!fields.failed() && !process.is_object() && !process.is_null()) fields.fail("process is not an object");
  profile.process = process;
  read_capture(fields, document, profile.capture);
  read_modules(fields, document, profile.modules);
  read_functions(fields, document, profile);
  read_locations(fields, document, profile);
  read_stacks(fields, document, profile);
  read_samples(fields, document, profile);
  read_threads(fields, document, profile);
  read_counts(fields, document, profile);
  if (fields.failed()) return *fields.error();
  return profile;
}

Result<Profile> read_xprof(const std::string& path) {
  auto cap = byte_cap();
  if (!cap) return cap.error();
  auto file = open_regular_file(path, "capture");
  if (!file) {
    Error error = file.error();
    if (error.code == ErrorCode::file_error) error.hint = "give a .xprof file written by `xref profile --out`";
    return error;
  }
  const auto over_cap = [&] {
    return make_error(ErrorCode::limit_exceeded,
                      path + " is larger than the cap of " + std::to_string(*cap) + " bytes for captures",
                      "set " + std::string(kMaxXprofBytesVariable) + "=BYTES to raise the cap");
  };
  if (file->size > *cap) return over_cap();
  // Read up to one byte past the cap: a file that grew since fstat.
  std::string text(static_cast<size_t>(file->size) + 1, '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = read(file->fd.get(), text.data() + done, text.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return make_error(ErrorCode::file_error, "cannot read capture " + path + ": " + std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
    if (done > *cap) return over_cap();
    if (done == text.size()) text.resize(text.size() + (uint64_t{1} << 16));
  }
  text.resize(done);
  UntrustedJson parsed = parse_untrusted_json(text);
  if (parsed.failure == UntrustedJson::Failure::too_deep) {
    return format_error(path + " is JSON " + too_deep_text() + "; no .xprof nests that deep");
  }
  if (!parsed.ok()) {
    ErrorPosition position;
    nlohmann::json::sax_parse(text, &position);
    if (text.empty() || position.byte >= text.size()) {
      return format_error(path + " is cut short: its JSON ends at byte " + std::to_string(text.size()) +
                          " before the document does");
    }
    return format_error(path + " is not JSON: a syntax error at byte " + std::to_string(position.byte));
  }
  auto profile = profile_from_json(parsed.value);
  if (!profile) {
    Error error = profile.error();
    error.message = path + ": " + error.message;
    return error;
  }
  return profile;
}

}  // namespace xref
