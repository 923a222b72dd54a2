#include "trace_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace xref {
namespace {

constexpr int kSchemaVersion = 1;

Error bad_input(std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message),
                    "give the output of `xref trace --json` or `xref trace --jsonl`");
}

Result<void> check_schema_version(const nlohmann::json& object) {
  if (!object.contains("schema_version") || object["schema_version"] != kSchemaVersion) {
    return bad_input("unknown schema_version " + object.value("schema_version", nlohmann::json()).dump() +
                     " (this xref reads " + std::to_string(kSchemaVersion) + ")");
  }
  return {};
}

Result<TraceFile> from_document(const nlohmann::json& document) {
  if (!document.is_object() || document.value("operation", "") != "live_trace") {
    return bad_input("not an xref live_trace document");
  }
  if (auto known = check_schema_version(document); !known) return known.error();
  TraceFile file;
  file.process = document.value("process", nlohmann::json());
  file.summary = document.value("summary", nlohmann::json());
  if (document.contains("windows") && document["windows"].is_array()) {
    for (const auto& window : document["windows"]) file.windows.push_back(window);
  }
  return file;
}

// One line of `--jsonl` output: {"type": "header", ...} (the process as
// known at attach), {"type": "window", ...} or {"type": "summary", ...}
// (the process after the trace, which wins).
Result<void> add_line(TraceFile& file, const nlohmann::json& line, size_t number) {
  const std::string type = line.is_object() ? line.value("type", "") : "";
  if (type == "header") {
    if (auto known = check_schema_version(line); !known) return known.error();
    if (file.process.is_null()) file.process = line.value("process", nlohmann::json());
  } else if (type == "window" && line.contains("window") && line["window"].is_object()) {
    file.windows.push_back(line["window"]);
  } else if (type == "summary") {
    file.process = line.value("process", nlohmann::json());
    file.summary = line.value("summary", nlohmann::json());
  } else {
    return bad_input("line " + std::to_string(number) + " is not an xref live_trace JSONL line");
  }
  return {};
}

Result<TraceFile> from_lines(const std::string& text) {
  TraceFile file;
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (parsed.is_discarded()) {
      if (number == 1) return bad_input("not JSON");
      const bool last = lines.eof();
      return bad_input((last ? "truncated JSONL line " : "malformed JSONL line ") + std::to_string(number));
    }
    if (auto added = add_line(file, parsed, number); !added) return added.error();
  }
  return file;
}

}  // namespace

Result<TraceFile> parse_trace_file(const std::string& text) {
  const nlohmann::json whole = nlohmann::json::parse(text, nullptr, false);
  Result<TraceFile> file = bad_input("not JSON");
  if (!whole.is_discarded() && !(whole.is_object() && whole.contains("type"))) {
    file = from_document(whole);
  } else {
    file = from_lines(text);
  }
  if (!file) return file;
  if (file->windows.empty()) return bad_input("the trace has no windows");
  return file;
}

Result<TraceFile> load_trace_file(const std::string& path, FileIdentity* identity) {
  const char* const hint = "give a file written by `xref trace --json` or `xref trace --jsonl`";
  auto unreadable = [&](Error error) {
    error.message = "cannot read " + error.message;
    if (error.code == ErrorCode::file_error) error.hint = hint;
    return error;
  };
  auto fd = open_user_file(path, O_RDONLY);
  if (!fd) return unreadable(fd.error());
  if (identity != nullptr) {
    auto opened = identity_of(fd->get(), path);
    if (!opened) return unreadable(opened.error());
    *identity = *opened;
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t count = read(fd->get(), buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return make_error(ErrorCode::file_error, "cannot read " + path + ": " + std::strerror(errno), hint);
    if (count == 0) break;
    text.append(buffer, static_cast<size_t>(count));
  }
  return parse_trace_file(text);
}

const nlohmann::json* window_with_id(const TraceFile& file, uint64_t id) {
  for (const auto& window : file.windows) {
    if (window.is_object() && window.contains("window_id") && window["window_id"].is_number_integer() &&
        window["window_id"] == id) {
      return &window;
    }
  }
  return nullptr;
}

std::string saved_text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

nlohmann::json saved_fetch_value(const nlohmann::json& fetch) {
  if (fetch.contains("signed_value")) return fetch["signed_value"];
  if (fetch.contains("value") && !fetch["value"].is_null()) return fetch["value"];
  return "<unreadable: " + fetch.value("error", std::string("?")) + ">";
}

}  // namespace xref
