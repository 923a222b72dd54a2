// trace show: what the saved trace says about itself (which calls it could
// see, which binary it was taken from, which windows it has).
#include "trace/saved/show.h"

#include <algorithm>

#include "build_check.h"
#include "input/input_file.h"
#include "number_parse.h"
#include "trace/saved/file.h"

namespace xref {
namespace {

constexpr int kMaxTreeDepth = 16;

std::set<uint64_t> va_set(const nlohmann::json& list) {
  std::set<uint64_t> vas;
  if (!list.is_array()) return vas;
  for (const auto& item : list) {
    if (!item.is_string()) continue;
    if (auto va = parse_u64(item.get<std::string>(), "VA")) vas.insert(*va);
  }
  return vas;
}

Error bad_window(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, where + ": " + what,
                    "give the output of `xref trace --json` or `xref trace --jsonl`");
}

bool is_type(const nlohmann::json& object, const char* key, nlohmann::json::value_t type, bool required) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return !required;
  if (type == nlohmann::json::value_t::number_unsigned) {
    return found->is_number_unsigned() || (found->is_number_integer() && found->get<int64_t>() >= 0);
  }
  return found->type() == type;
}

bool is_va(const nlohmann::json& object, const char* key, bool required) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return !required;
  return found->is_string() && parse_u64(found->get<std::string>(), key).ok();
}

// The fields trace show reads, with the types docs/trace.md gives them, so
// the rest of the code can read them without checking again.
Result<void> check_event(const nlohmann::json& event, const std::string& where) {
  using Type = nlohmann::json::value_t;
  if (!event.is_object()) return bad_window(where, "not an object");
  static const std::set<std::string> kinds = {"entry", "return", "tail_exit", "unwound", "stop"};
  if (!is_type(event, "kind", Type::string, true) || !kinds.count(event["kind"].get<std::string>())) {
    return bad_window(where, "kind is not one of entry, return, tail_exit, unwound, stop");
  }
  if (!is_type(event, "depth", Type::number_unsigned, true) || event["depth"].get<uint64_t>() > 0xffff) {
    return bad_window(where, "depth is not a number from 0 to 65535");
  }
  if (!is_va(event, "target_va", event["kind"] == "entry")) return bad_window(where, "target_va is not a hex VA");
  if (!is_va(event, "call_site_va", false)) return bad_window(where, "call_site_va is not a hex VA");
  for (const char* key : {"symbol", "module", "call_site_module"}) {
    if (!is_type(event, key, Type::string, false)) return bad_window(where, std::string(key) + " is not a string");
  }
  for (const char* key : {"tail_call", "indirect", "call_site_verified", "depth_overflow"}) {
    if (!is_type(event, key, Type::boolean, false)) return bad_window(where, std::string(key) + " is not true or false");
  }
  if (!is_type(event, "fetches", Type::array, false)) return bad_window(where, "fetches is not a list");
  for (const auto& fetch : event.value("fetches", nlohmann::json::array())) {
    if (!fetch.is_object()) return bad_window(where, "a fetched value is not an object");
    if (const std::string problem = saved_string_fetch_problem(fetch); !problem.empty()) {
      return bad_window(where, problem);
    }
  }
  return {};
}

}  // namespace

Result<void> check_saved_window(const nlohmann::json& window, size_t index) {
  using Type = nlohmann::json::value_t;
  std::string where = "window #" + std::to_string(index + 1) + " of the file";
  if (!window.is_object()) return bad_window(where, "not an object");
  if (!is_type(window, "window_id", Type::number_unsigned, true)) return bad_window(where, "window_id is not a number");
  where = "window " + std::to_string(window["window_id"].get<uint64_t>());
  if (!is_type(window, "tid", Type::number_unsigned, false)) return bad_window(where, "tid is not a number");
  for (const char* key : {"start_va", "stop_va"}) {
    if (!is_va(window, key, false)) return bad_window(where, std::string(key) + " is not a hex VA");
  }
  if (!is_type(window, "status", Type::string, false)) return bad_window(where, "status is not a string");
  if (!is_type(window, "possible_loss", Type::boolean, false)) return bad_window(where, "possible_loss is not true or false");
  if (!is_type(window, "start_fetches", Type::array, false)) return bad_window(where, "start_fetches is not a list");
  for (const auto& fetch : window.value("start_fetches", nlohmann::json::array())) {
    if (const std::string problem = saved_string_fetch_problem(fetch); !problem.empty()) {
      return bad_window(where, problem);
    }
  }
  if (!is_type(window, "events", Type::array, true)) return bad_window(where, "it has no events list");
  size_t number = 0;
  for (const auto& event : window["events"]) {
    if (auto checked = check_event(event, where + ", event " + std::to_string(number++)); !checked) return checked;
  }
  return {};
}

namespace {

Error wrong_build(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, path + " is not the traced build: " + what,
                    "pass --bin with the binary the trace was taken from");
}

}  // namespace

const char* show_node_kind_name(ShowNodeKind kind) {
  switch (kind) {
    case ShowNodeKind::function: return "function";
    case ShowNodeKind::indirect_site: return "indirect_site";
    case ShowNodeKind::observed: return "observed";
  }
  return "unknown";
}

TracedProbes traced_probes(const nlohmann::json& summary) {
  TracedProbes traced;
  if (!summary.is_object() || !summary.contains("traced") || !summary["traced"].is_object()) return traced;
  traced.known = true;
  traced.call_sites = va_set(summary["traced"].value("call_sites", nlohmann::json()));
  traced.functions = va_set(summary["traced"].value("functions", nlohmann::json()));
  return traced;
}

Result<std::shared_ptr<const ElfImage>> open_traced_binary(const nlohmann::json& process, const std::string& bin,
                                                          std::vector<std::string>& warnings) {
  const std::string build_id = saved_text(process, "build_id");
  const std::string sha256 = saved_text(process, "exe_sha256");
  const std::string path = bin.empty() ? saved_text(process, "exe_path") : bin;
  if (path.empty()) {
    return make_error(ErrorCode::invalid_argument, "the trace does not name the traced executable",
                      "pass --bin with the binary the trace was taken from");
  }
  auto image = open_user_elf(path);  // a path the user (or the user's trace) names
  if (!image) {
    Error error = image.error();
    error.message = "cannot use " + path + " as the traced binary: " + error.message;
    error.hint = bin.empty() ? "the trace names this file; pass --bin with a copy of the traced build"
                             : "pass --bin with a copy of the traced build";
    if (!build_id.empty()) error.hint += " (build-id " + build_id + ")";
    return error;
  }
  if (build_id.empty() && sha256.empty()) {
    warnings.push_back("the trace records no build identity; " + path + " is used unchecked");
    return std::make_shared<const ElfImage>(std::move(*image));
  }
  auto comparison = compare_build(*image, path, build_id, sha256, "the trace's");
  if (!comparison) return comparison.error();
  if (!comparison->difference.empty()) return wrong_build(path, comparison->difference);
  if (comparison->other_bytes) {
    warnings.push_back(path + ": its SHA-256 differs from the trace's executable, but its build-id " + build_id +
                       " is the same: the same build in other bytes (e.g. stripped)");
  }
  return std::make_shared<const ElfImage>(std::move(*image));
}

namespace {

Error no_such_window(uint64_t id, const std::vector<std::optional<uint64_t>>& ids) {
  return make_error(ErrorCode::invalid_argument, "the trace has no window " + std::to_string(id),
                    "its windows are " + window_ids_text(ids));
}

}  // namespace

Result<std::vector<nlohmann::json>> select_windows(const TraceFile& file, std::optional<uint64_t> window_id) {
  std::vector<nlohmann::json> selected;
  std::vector<std::optional<uint64_t>> ids;
  for (size_t index = 0; index < file.windows.size(); ++index) {
    const nlohmann::json& window = file.windows[index];
    if (auto checked = check_saved_window(window, index); !checked) return checked.error();
    ids.push_back(window["window_id"].get<uint64_t>());
    if (!window_id || ids.back() == *window_id) selected.push_back(window);
  }
  if (!selected.empty()) return selected;
  return no_such_window(*window_id, ids);
}

Result<std::vector<size_t>> select_window_indices(const SavedTrace& trace, std::optional<uint64_t> window_id) {
  std::vector<size_t> selected;
  for (size_t index = 0; index < trace.window_count(); ++index) {
    if (!window_id || trace.window_ids()[index] == *window_id) selected.push_back(index);
  }
  if (!selected.empty()) return selected;
  return no_such_window(*window_id, trace.window_ids());
}

int reached_depth(const nlohmann::json& window) {
  int deepest = 1;
  for (const auto& event : window.value("events", nlohmann::json::array())) {
    if (saved_text(event, "kind") == "entry") deepest = std::max(deepest, event.value("depth", 0));
  }
  return std::min(deepest, kMaxTreeDepth);
}

}  // namespace xref
