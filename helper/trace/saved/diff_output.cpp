#include "trace/saved/diff_output.h"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>

#include "hex.h"
#include "render/name_labels.h"
#include "render/window_text.h"

namespace xref {
namespace {

constexpr size_t kNoStep = std::numeric_limits<size_t>::max();

std::string value_text(const nlohmann::json& value) {
  if (value.is_null()) return "(none)";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string fetches_text(const nlohmann::json& fetches) {
  std::string text;
  for (const auto& fetch : fetches) {
    text += "  " + fetch["name"].get<std::string>() + "=" + value_text(saved_fetch_value(fetch));
  }
  return text;
}

// A changed event's values: the changed ones as "name: A → B", in A's order.
std::string changes_text(const DiffEvent& a, const std::vector<ValueChange>& changes) {
  std::string text;
  for (const ValueChange& change : changes) {
    text += "  " + change.name + ": " + value_text(change.a) + " \u2192 " + value_text(change.b);
  }
  for (const auto& fetch : a.fetches) {
    const std::string name = fetch["name"].get<std::string>();
    const bool changed = std::any_of(changes.begin(), changes.end(),
                                     [&name](const ValueChange& change) { return change.name == name; });
    if (!changed) text += "  " + name + "=" + value_text(saved_fetch_value(fetch));
  }
  return text;
}

// "> handle_request", as the live text shows an event (names first, the
// static VA in brackets with --addresses), without the call site: the same
// call may come from elsewhere in the other run.
std::string event_text(const DiffEvent& event, const render::NameLabels& labels, bool addresses) {
  const std::string target = (event.module.empty() ? "" : event.module + ":") + to_hex(event.target_va);
  if (event.kind == "stop") return "* stop" + (addresses ? "  [" + target + "]" : "");
  const std::string name = event.symbol.empty() ? target : labels(event.symbol);
  std::string text = (event.kind == "entry" ? "> " : "< ") + name;
  if (event.tail_call || event.kind == "tail_exit") text += " [tail]";
  if (event.kind == "unwound") text += " [unwound]";
  if (addresses && !event.symbol.empty()) text += "  [" + target + "]";
  return text;
}

render::NameLabels diff_labels(const WindowDiff& diff) {
  std::vector<std::string> symbols;
  for (const auto* side : {&diff.a, &diff.b}) {
    for (const DiffEvent& event : *side) {
      if (!event.symbol.empty()) symbols.push_back(event.symbol);
    }
  }
  return render::NameLabels(symbols);
}

char mark_char(DiffMark mark) {
  switch (mark) {
    case DiffMark::same: return ' ';
    case DiffMark::only_a: return '-';
    case DiffMark::only_b: return '+';
    case DiffMark::changed: return '~';
  }
  return '?';
}

std::string line_prefix(char mark, uint32_t depth) {
  std::ostringstream prefix;
  prefix << mark << std::setw(4) << depth << "  " << std::string(2 * depth, ' ');
  return prefix.str();
}

// Which steps the text shows: every difference, `context` steps around
// it, the entries enclosing it; and any hidden run of a single step.
std::vector<bool> visible_steps(const WindowDiff& diff, size_t context) {
  const size_t count = diff.steps.size();
  std::vector<bool> visible(count, false);
  std::vector<size_t> open_entries;  // by depth, the step of the entry open there
  for (size_t i = 0; i < count; ++i) {
    const DiffStep& step = diff.steps[i];
    const DiffEvent& event = diff.event(step);
    if (step.mark != DiffMark::same) {
      const size_t first = i > context ? i - context : 0;
      const size_t last = std::min(count - 1, context > count ? count - 1 : i + context);
      for (size_t j = first; j <= last; ++j) visible[j] = true;
      const size_t enclosing = std::min<size_t>(event.depth, open_entries.size());
      for (size_t depth = 0; depth < enclosing; ++depth) {
        if (open_entries[depth] != kNoStep) visible[open_entries[depth]] = true;
      }
    }
    if (event.kind == "entry") {
      open_entries.resize(event.depth, kNoStep);
      open_entries.push_back(i);
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const bool alone = !visible[i] && (i == 0 || visible[i - 1]) && (i + 1 == count || visible[i + 1]);
    if (alone) visible[i] = true;
  }
  return visible;
}

void print_side(std::ostream& out, const char* label, const DiffSide& side, size_t events) {
  out << label << "  " << side.path << "  window " << side.window.value("window_id", nlohmann::json()).dump()
      << "  thread " << side.window.value("tid", nlohmann::json()).dump() << "  "
      << render::window_status_text(side.window) << "  " << events << " events";
  if (const std::string mark = render::window_mark_text(side.window); !mark.empty()) out << "  " << mark;
  if (side.process.is_object() && !side.process.value("build_id", std::string()).empty()) {
    out << "  build-id " << side.process.value("build_id", std::string());
  } else if (side.process.is_object() && !side.process.value("exe_sha256", std::string()).empty()) {
    out << "  exe_sha256 " << side.process.value("exe_sha256", std::string());
  }
  out << "\n";
}

nlohmann::json side_json(const DiffSide& side, size_t events) {
  nlohmann::json json = {
      {"file", side.path},
      {"window_id", side.window.value("window_id", nlohmann::json())},
      {"tid", side.window.value("tid", nlohmann::json())},
      {"status", side.window.value("status", nlohmann::json())},
      {"possible_loss", side.window.value("possible_loss", false)},
      {"events", events},
      {"build_id", nullptr},
      {"exe_sha256", nullptr},
  };
  if (side.process.is_object()) {
    json["build_id"] = side.process.value("build_id", nlohmann::json());
    json["exe_sha256"] = side.process.value("exe_sha256", nlohmann::json());
  }
  return json;
}

const char* change_name(DiffMark mark) {
  switch (mark) {
    case DiffMark::only_a: return "only_in_a";
    case DiffMark::only_b: return "only_in_b";
    case DiffMark::changed: return "changed";
    case DiffMark::same: return "same";
  }
  return "?";
}

}  // namespace

void print_diff(std::ostream& out, const DiffReport& report, const DiffTextStyle& style) {
  const WindowDiff& diff = report.diff;
  const render::NameLabels labels = diff_labels(diff);
  print_side(out, "A", report.a, diff.a.size());
  print_side(out, "B", report.b, diff.b.size());
  for (const std::string& warning : report.warnings) out << "warning: " << warning << "\n";
  if (diff.equal()) {
    out << "equal: " << diff.same << " events, the same calls with the same values\n";
    return;
  }
  out << "different: " << diff.only_a << " only in A, " << diff.only_b << " only in B, " << diff.changed
      << " changed, " << diff.same << " same\n";
  const std::vector<bool> visible = visible_steps(diff, style.context);
  for (size_t i = 0; i < diff.steps.size();) {
    const DiffStep& step = diff.steps[i];
    const DiffEvent& event = diff.event(step);
    if (!visible[i]) {
      size_t hidden = 0;
      while (i + hidden < diff.steps.size() && !visible[i + hidden]) ++hidden;
      out << line_prefix(' ', event.depth) << "\u2026 " << hidden << " same events\n";
      i += hidden;
      continue;
    }
    out << line_prefix(mark_char(step.mark), event.depth) << event_text(event, labels, style.addresses)
        << (step.mark == DiffMark::changed ? changes_text(event, step.changes) : fetches_text(event.fetches)) << "\n";
    ++i;
  }
}

nlohmann::json diff_json(const DiffReport& report) {
  const WindowDiff& diff = report.diff;
  nlohmann::json differences = nlohmann::json::array();
  for (const DiffStep& step : diff.steps) {
    if (step.mark == DiffMark::same) continue;
    const DiffEvent& event = diff.event(step);
    nlohmann::json difference = {
        {"change", change_name(step.mark)},
        {"seq_a", step.a ? nlohmann::json(diff.a[*step.a].seq) : nlohmann::json(nullptr)},
        {"seq_b", step.b ? nlohmann::json(diff.b[*step.b].seq) : nlohmann::json(nullptr)},
        {"kind", event.kind},
        {"target_va", to_hex(event.target_va)},
        {"symbol", event.symbol},
        {"depth", event.depth},
        {"tail_call", event.tail_call},
    };
    if (!event.module.empty()) difference["module"] = event.module;
    if (step.mark == DiffMark::changed) {
      nlohmann::json values = nlohmann::json::array();
      for (const ValueChange& change : step.changes) values.push_back({{"name", change.name}, {"a", change.a}, {"b", change.b}});
      difference["values"] = values;
    } else {
      difference["fetches"] = event.fetches;
    }
    differences.push_back(std::move(difference));
  }
  return {
      {"equal", diff.equal()},
      {"a", side_json(report.a, diff.a.size())},
      {"b", side_json(report.b, diff.b.size())},
      {"summary", {{"only_in_a", diff.only_a}, {"only_in_b", diff.only_b}, {"changed", diff.changed}, {"same", diff.same}}},
      {"differences", differences},
  };
}

}  // namespace xref
