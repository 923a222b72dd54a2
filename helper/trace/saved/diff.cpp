#include "trace/saved/diff.h"

#include <map>
#include <set>
#include <tuple>

#include "number_parse.h"
#include "trace/saved/sequence_alignment.h"

namespace xref {
namespace {

Error malformed(const nlohmann::json& event, size_t index, const std::string& what) {
  const std::string seq = event.is_object() && event.contains("seq") ? " (seq " + event["seq"].dump() + ")" : "";
  return make_error(ErrorCode::invalid_argument, "event " + std::to_string(index) + seq + ": " + what,
                    "give the output of `xref trace --json` or `xref trace --jsonl`");
}

// A count or number saved in JSON, read back however the writer typed it.
std::optional<uint64_t> natural(const nlohmann::json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_number_integer()) return std::nullopt;
  if (object[key].is_number_unsigned()) return object[key].get<uint64_t>();
  const int64_t value = object[key].get<int64_t>();
  return value >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(value)) : std::nullopt;
}

bool is_kind(const std::string& kind) {
  static const std::set<std::string> kinds = {"entry", "return", "tail_exit", "unwound", "stop"};
  return kinds.count(kind) > 0;
}

Result<DiffEvent> diff_event(const nlohmann::json& saved, size_t index) {
  if (!saved.is_object()) return malformed(saved, index, "not an object");
  DiffEvent event;
  const auto seq = natural(saved, "seq");
  if (!seq) return malformed(saved, index, "no seq number");
  event.seq = *seq;
  if (!saved.contains("kind") || !saved["kind"].is_string() || !is_kind(saved["kind"].get<std::string>())) {
    return malformed(saved, index, "no kind (entry, return, tail_exit, unwound or stop)");
  }
  event.kind = saved["kind"].get<std::string>();
  const auto depth = natural(saved, "depth");
  if (!depth || *depth > UINT32_MAX) return malformed(saved, index, "no depth");
  event.depth = static_cast<uint32_t>(*depth);
  if (!saved.contains("target_va") || !saved["target_va"].is_string()) return malformed(saved, index, "no target_va");
  auto target_va = parse_u64(saved["target_va"].get<std::string>(), "target_va");
  if (!target_va) return malformed(saved, index, target_va.error().message);
  event.target_va = *target_va;
  event.module = saved_text(saved, "module");
  event.symbol = saved_text(saved, "symbol");
  event.tail_call = saved.contains("tail_call") && saved["tail_call"] == true;
  const bool indirect = saved.contains("indirect") && saved["indirect"] == true;
  if (saved.contains("fetches")) {
    if (!saved["fetches"].is_array()) return malformed(saved, index, "fetches is not a list");
    for (const auto& fetch : saved["fetches"]) {
      if (!fetch.is_object() || !fetch.contains("name") || !fetch["name"].is_string()) {
        return malformed(saved, index, "a fetch without a name");
      }
      if (const std::string problem = saved_string_fetch_problem(fetch); !problem.empty()) {
        return malformed(saved, index, problem);
      }
      if (indirect && fetch["name"] == "target") continue;
      event.fetches.push_back(fetch);
    }
  }
  return event;
}

// What makes two events the same call in two runs of one build.
using CallKey = std::tuple<std::string, std::string, uint64_t, uint32_t, bool>;

CallKey call_key(const DiffEvent& event) {
  return {event.kind, event.module, event.target_va, event.depth, event.tail_call};
}

// The fetches of both events by name, A's order first; those whose shown
// values differ.
std::vector<ValueChange> value_changes(const DiffEvent& a, const DiffEvent& b) {
  std::vector<std::string> names;
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> values;
  for (const auto& [fetches, side] : {std::pair{&a.fetches, 0}, std::pair{&b.fetches, 1}}) {
    for (const auto& fetch : *fetches) {
      const std::string name = fetch["name"].get<std::string>();
      if (!values.count(name)) names.push_back(name);
      (side == 0 ? values[name].first : values[name].second) = saved_fetch_value(fetch);
    }
  }
  std::vector<ValueChange> changes;
  for (const std::string& name : names) {
    const auto& [in_a, in_b] = values[name];
    if (in_a != in_b) changes.push_back({name, in_a, in_b});
  }
  return changes;
}

// The identity a trace gives its build: the executable's build-id, or the
// SHA-256 of its bytes when it has none.
struct BuildIdentity {
  std::string build_id;
  std::string exe_sha256;
  bool known() const { return !build_id.empty() || !exe_sha256.empty(); }
  std::string text() const { return build_id.empty() ? "exe_sha256 " + exe_sha256 : "build-id " + build_id; }
};

BuildIdentity build_identity(const nlohmann::json& process) {
  return {saved_text(process, "build_id"), saved_text(process, "exe_sha256")};
}

}  // namespace

Result<std::vector<DiffEvent>> diff_events(const nlohmann::json& window) {
  if (!window.is_object() || !window.contains("events") || !window["events"].is_array()) {
    return make_error(ErrorCode::invalid_argument, "the window has no list of events",
                      "give the output of `xref trace --json` or `xref trace --jsonl`");
  }
  std::vector<DiffEvent> events;
  const nlohmann::json& saved = window["events"];
  events.reserve(saved.size());
  for (size_t index = 0; index < saved.size(); ++index) {
    auto event = diff_event(saved[index], index);
    if (!event) return event.error();
    events.push_back(std::move(*event));
  }
  return events;
}

Result<WindowDiff> diff_windows(const nlohmann::json& a, const nlohmann::json& b, size_t max_differing_events,
                                const std::string& a_name, const std::string& b_name) {
  auto named = [](const std::string& name, const nlohmann::json& window, Error error) {
    const std::string id = window.is_object() ? window.value("window_id", nlohmann::json()).dump() : "?";
    error.message = name + " window " + id + ": " + error.message;
    return error;
  };
  WindowDiff diff;
  auto a_events = diff_events(a);
  if (!a_events) return named(a_name, a, a_events.error());
  auto b_events = diff_events(b);
  if (!b_events) return named(b_name, b, b_events.error());
  diff.a = std::move(*a_events);
  diff.b = std::move(*b_events);

  std::map<CallKey, uint32_t> key_numbers;
  auto numbered = [&key_numbers](const std::vector<DiffEvent>& events) {
    std::vector<uint32_t> numbers;
    numbers.reserve(events.size());
    for (const DiffEvent& event : events) {
      numbers.push_back(key_numbers.emplace(call_key(event), static_cast<uint32_t>(key_numbers.size())).first->second);
    }
    return numbers;
  };
  const std::vector<uint32_t> a_keys = numbered(diff.a);
  const std::vector<uint32_t> b_keys = numbered(diff.b);
  auto aligned = align_sequences(a_keys, b_keys, max_differing_events);
  if (!aligned && aligned.error().code != ErrorCode::invalid_argument) return aligned.error();
  if (!aligned) {
    return make_error(ErrorCode::invalid_argument,
                      "the windows differ in more than " + std::to_string(max_differing_events) +
                          " events; too different to align",
                      "compare windows of the same request path, or smaller windows");
  }

  for (const AlignedStep& aligned_step : *aligned) {
    DiffStep step;
    switch (aligned_step.kind) {
      case AlignedKind::same:
        step.a = aligned_step.a;
        step.b = aligned_step.b;
        step.changes = value_changes(diff.a[aligned_step.a], diff.b[aligned_step.b]);
        step.mark = step.changes.empty() ? DiffMark::same : DiffMark::changed;
        ++(step.changes.empty() ? diff.same : diff.changed);
        break;
      case AlignedKind::only_a:
        step.mark = DiffMark::only_a;
        step.a = aligned_step.a;
        ++diff.only_a;
        break;
      case AlignedKind::only_b:
        step.mark = DiffMark::only_b;
        step.b = aligned_step.b;
        ++diff.only_b;
        break;
    }
    diff.steps.push_back(std::move(step));
  }
  return diff;
}

Result<std::vector<std::string>> check_same_build(const std::string& a_name, const nlohmann::json& a,
                                                  const std::string& b_name, const nlohmann::json& b,
                                                  bool allow_mismatch) {
  const BuildIdentity a_build = build_identity(a);
  const BuildIdentity b_build = build_identity(b);
  const std::string allow = "pass --allow-build-mismatch to compare them anyway";
  for (const auto& [name, build] : {std::pair{&a_name, &a_build}, std::pair{&b_name, &b_build}}) {
    if (build->known()) continue;
    const std::string message = *name + " does not say which build it traced (no process build_id or exe_sha256)";
    if (!allow_mismatch) return make_error(ErrorCode::invalid_argument, message, allow);
    return std::vector<std::string>{message + "; compared anyway (--allow-build-mismatch)"};
  }
  const bool by_build_id = !a_build.build_id.empty() && !b_build.build_id.empty();
  const bool same = by_build_id ? a_build.build_id == b_build.build_id
                                : !a_build.exe_sha256.empty() && a_build.exe_sha256 == b_build.exe_sha256;
  if (same) return std::vector<std::string>{};
  const std::string message = a_name + " and " + b_name + " are traces of different builds (" + a_build.text() +
                              " vs " + b_build.text() + "), whose static VAs do not compare";
  if (!allow_mismatch) return make_error(ErrorCode::invalid_argument, message, allow);
  return std::vector<std::string>{message + "; compared anyway (--allow-build-mismatch)"};
}

}  // namespace xref
