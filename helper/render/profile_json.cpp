#include "render/profile_json.h"

#include <cmath>

#include "output/json_envelope.h"
#include "xprof/file.h"

namespace xref::render {
namespace {

// 45.1234 -> 45.12: what the text shows, without float noise.
double percent(double share) { return std::round(share * 10000.0) / 100.0; }

nlohmann::json unresolved_json(const std::vector<UnresolvedSamples>& rows, const ProfileSelection& selection) {
  nlohmann::json list = nlohmann::json::array();
  for (const UnresolvedSamples& row : rows) {
    list.push_back({{"reason", row.reason}, {"samples", row.samples}, {"percent", percent(selection.share(row.samples))}});
  }
  return list;
}

// Fills data.rows with the first `top` of `count` rows made by `row(i)`,
// and counts the rest with `samples(i)`.
template <typename Row, typename Samples>
void rows_json(nlohmann::json& data, size_t count, size_t top, Row row, Samples samples) {
  nlohmann::json rows = nlohmann::json::array();
  const size_t shown = top == 0 ? count : std::min(top, count);
  uint64_t hidden = 0;
  for (size_t index = 0; index < count; ++index) {
    if (index < shown) rows.push_back(row(index));
    else hidden += samples(index);
  }
  data["rows"] = std::move(rows);
  data["rows_not_shown"] = count - shown;
  data["samples_not_shown"] = hidden;
}

}  // namespace

nlohmann::json profile_summary_json(const Profile& profile, const ProfileSelection& selection) {
  const ProfileCaptureParameters& capture = profile.capture;
  nlohmann::json ends = nlohmann::json::object();
  for (const auto& [end, samples] : selection.incomplete_by_end) ends[end] = samples;
  return {
      {"event", capture.event},
      {"event_reason", capture.event_reason},
      {"frequency_hz", capture.frequency_hz},
      {"period_ns", capture.period_ns},
      {"callers", capture.callers},
      {"duration_ns", capture.duration_ns},
      {"ended_by", capture.ended_by},
      {"threads", profile.threads.size()},
      {"samples", selection.profile_samples},
      {"within", selection.within.empty() ? nlohmann::json() : nlohmann::json(selection.within)},
      {"selected_samples", selection.samples},
      {"complete", profile.complete()},
      {"incomplete_samples", selection.incomplete},
      {"incomplete_by_end", ends},
      {"kernel_samples", selection.in_kernel},
      {"losses", losses_json(profile.losses)},
      {"capture_warnings", profile.warnings},
  };
}

void function_report_json(nlohmann::json& data, const Profile& profile, const std::vector<FunctionRow>& rows,
                          const ProfileSelection& selection, size_t top) {
  rows_json(
      data, rows.size(), top,
      [&](size_t index) {
        const FunctionRow& row = rows[index];
        nlohmann::json start;
        if (row.key.kind == FrameKey::Kind::function) start = hex_value(profile.functions[row.key.function].start);
        if (row.key.kind == FrameKey::Kind::address) start = hex_value(row.key.address);
        return nlohmann::json{{"function", row.name},
                              {"module", row.module},
                              {"address", start},
                              {"symbol", row.key.kind == FrameKey::Kind::kernel ||
                                             (row.key.kind == FrameKey::Kind::function &&
                                              function_has_symbol(profile, profile.functions[row.key.function]))},
                              {"self_samples", row.self},
                              {"self_percent", percent(selection.share(row.self))},
                              {"total_samples", row.total},
                              {"total_percent", percent(selection.share(row.total))}};
      },
      [&](size_t index) { return rows[index].self; });
}

void caller_report_json(nlohmann::json& data, const std::vector<CallerPath>& paths, const ProfileSelection& selection,
                        size_t top) {
  rows_json(
      data, paths.size(), top,
      [&](size_t index) {
        const CallerPath& path = paths[index];
        return nlohmann::json{{"path", path.names},
                              {"end", path.end},
                              {"samples", path.samples},
                              {"percent", percent(selection.share(path.samples))}};
      },
      [&](size_t index) { return paths[index].samples; });
}

void line_report_json(nlohmann::json& data, const LineReport& report, const ProfileSelection& selection, size_t top) {
  rows_json(
      data, report.lines.size(), top,
      [&](size_t index) {
        const LineRow& row = report.lines[index];
        return nlohmann::json{{"file", row.file},         {"line", row.line},
                              {"function", row.function}, {"module", row.module},
                              {"samples", row.samples},   {"percent", percent(selection.share(row.samples))}};
      },
      [&](size_t index) { return report.lines[index].samples; });
  data["unresolved"] = unresolved_json(report.unresolved, selection);
  data["unresolved_samples"] = report.unresolved_samples;
}

void block_report_json(nlohmann::json& data, const BlockReport& report, const ProfileSelection& selection, size_t top) {
  rows_json(
      data, report.blocks.size(), top,
      [&](size_t index) {
        const BlockRow& row = report.blocks[index];
        return nlohmann::json{{"function", row.function},
                              {"module", row.module},
                              {"start", hex_value(row.start)},
                              {"end", hex_value(row.end)},
                              {"instructions", row.instructions},
                              {"samples", row.samples},
                              {"percent", percent(selection.share(row.samples))}};
      },
      [&](size_t index) { return report.blocks[index].samples; });
  data["unresolved"] = unresolved_json(report.unresolved, selection);
  data["unresolved_samples"] = report.unresolved_samples;
}

nlohmann::json annotation_json(const Annotation& annotation, bool percent_function) {
  nlohmann::json instructions = nlohmann::json::array();
  for (const AnnotatedInstruction& row : annotation.instructions) {
    nlohmann::json line = {{"address", hex_value(row.address)},
                           {"size", row.size},
                           {"text", row.text},
                           {"samples", row.samples},
                           {"percent", percent(share_of(row.samples, annotation.share_base))},
                           {"hottest", row.hottest},
                           {"file", nullptr},
                           {"line", nullptr}};
    if (row.line) {
      line["file"] = row.line->file;
      line["line"] = row.line->line;
    }
    if (row.source_text) line["source_text"] = *row.source_text;
    instructions.push_back(std::move(line));
  }
  return {
      {"function", annotation.name},
      {"module", annotation.module},
      {"start", hex_value(annotation.start)},
      {"end", hex_value(annotation.end)},
      {"percent_of", percent_function ? "function" : "capture"},
      {"samples", annotation.function_samples},
      {"percent", percent(share_of(annotation.function_samples, annotation.profile_samples))},
      {"capture_samples", annotation.profile_samples},
      {"kernel_samples", annotation.kernel_samples},
      {"unplaced_samples", annotation.unplaced_samples},
      {"hidden_instructions", annotation.hidden_instructions},
      {"unreadable_sources", annotation.unreadable_sources},
      {"source_lines", annotation.has_lines},
      {"instructions", instructions},
  };
}

nlohmann::json diff_json(const ProfileDiff& diff, const std::string& before, const std::string& after,
                         double min_delta_points) {
  nlohmann::json functions = nlohmann::json::array();
  for (const DiffRow& row : diff.rows) {
    functions.push_back({{"function", row.name},
                         {"module", row.module},
                         {"before_samples", row.before_samples},
                         {"after_samples", row.after_samples},
                         {"before_percent", percent(row.before_share)},
                         {"after_percent", percent(row.after_share)},
                         {"change_points", std::round(row.change_points() * 100.0) / 100.0},
                         {"matched_by", row.matched_by}});
  }
  return {
      {"before", {{"file", before}, {"samples", diff.before_samples}, {"build_id", diff.before_build_id}}},
      {"after", {{"file", after}, {"samples", diff.after_samples}, {"build_id", diff.after_build_id}}},
      {"across_builds", diff.across_builds},
      {"min_delta_points", min_delta_points},
      {"functions_not_shown", diff.filtered},
      {"functions", functions},
  };
}

}  // namespace xref::render
