#include "render/profile_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "render/columns.h"
#include "render/duration.h"

namespace xref::render {
namespace {

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string share_and_count(double share, uint64_t count) {
  return pad_left(share_text(share), 8) + " " + pad_left(std::to_string(count), 8);
}

// "... 12 more functions (3.10%) not shown; --top 0 shows all".
void more_rows(std::vector<std::string>& lines, size_t shown, size_t all, uint64_t hidden_samples,
               const ProfileSelection& selection, const char* noun) {
  if (shown >= all) return;
  lines.push_back("... " + std::to_string(all - shown) + " more " + noun + " (" + std::to_string(hidden_samples) +
                  " samples, " + share_text(selection.share(hidden_samples)) + ") not shown; --top 0 shows all");
}

void unresolved_lines(std::vector<std::string>& lines, const std::vector<UnresolvedSamples>& rows, uint64_t total,
                      const ProfileSelection& selection) {
  if (rows.empty()) return;
  lines.push_back("");
  lines.push_back("Unresolved: " + std::to_string(total) + " samples (" + share_text(selection.share(total)) + ")");
  for (const UnresolvedSamples& row : rows) {
    lines.push_back(share_and_count(selection.share(row.samples), row.samples) + "  " + row.reason);
  }
}

// The first `top` rows (0: all) as lines made by `line(row)`, the rest
// counted with `samples(row)` on a last line.
template <typename Row, typename Line, typename Samples>
void table_rows(std::vector<std::string>& lines, const std::vector<Row>& rows, size_t top,
                const ProfileSelection& selection, const char* noun, Line line, Samples samples) {
  const size_t shown = top == 0 ? rows.size() : std::min(top, rows.size());
  uint64_t hidden = 0;
  for (size_t index = 0; index < rows.size(); ++index) {
    if (index < shown) lines.push_back(line(rows[index]));
    else hidden += samples(rows[index]);
  }
  more_rows(lines, shown, rows.size(), hidden, selection, noun);
}

}  // namespace

std::string share_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", share * 100.0);
  return text;
}

std::vector<std::string> profile_header_lines(const Profile& profile, const ProfileSelection& selection) {
  std::vector<std::string> lines;
  const ProfileCaptureParameters& capture = profile.capture;
  std::string process;
  if (profile.process.is_object()) {
    process = profile.process.value("exe_path", std::string());
    const auto pid = profile.process.find("pid");
    if (pid != profile.process.end() && pid->is_number()) process += " (pid " + pid->dump() + ")";
  }
  lines.push_back("# " + (process.empty() ? std::string("a process") : process) + ": " +
                  std::to_string(selection.profile_samples) + " samples in " + std::to_string(profile.threads.size()) +
                  (profile.threads.size() == 1 ? " thread" : " threads") + " over " + duration_text(capture.duration_ns) +
                  (capture.ended_by.empty() ? "" : " (ended by " + capture.ended_by + ")"));
  std::string event = "# event " + capture.event;
  if (!capture.event_reason.empty()) event += " (" + capture.event_reason + ")";
  event += " at " + std::to_string(capture.frequency_hz) + " Hz";
  if (capture.period_ns != 0) event += ", " + duration_text(capture.period_ns) + " of CPU per sample";
  event += "; callers " + capture.callers;
  lines.push_back(event);
  std::string complete = "# complete: ";
  complete += profile.complete() ? "yes" : "no";
  if (selection.incomplete != 0) {
    std::string ends;
    for (const auto& [end, samples] : selection.incomplete_by_end) {
      ends += (ends.empty() ? "" : ", ") + end + " " + std::to_string(samples);
    }
    complete += "; " + std::to_string(selection.incomplete) + " samples (" + share_text(selection.share(selection.incomplete)) +
                ") in stacks that are not whole (" + ends + "): their callers are cut short";
  }
  const ProfileLosses& losses = profile.losses;
  complete += "; losses: throttled " + std::to_string(losses.throttled) + ", stacks_full " +
              std::to_string(losses.stacks_full) + ", counts_full " + std::to_string(losses.counts_full) +
              ", requests_lost " + std::to_string(losses.requests_lost);
  lines.push_back(complete);
  if (!selection.within.empty()) {
    lines.push_back("# --within " + selection.within + ": " + std::to_string(selection.samples) + " of " +
                    std::to_string(selection.profile_samples) +
                    " samples pass through it; shares below are of those samples");
  }
  if (selection.in_kernel != 0) {
    lines.push_back("# " + std::to_string(selection.in_kernel) + " samples (" + share_text(selection.share(selection.in_kernel)) +
                    ") taken in kernel mode: [kernel] above the function that entered it");
  }
  for (const std::string& warning : profile.warnings) lines.push_back("# warning: " + warning);
  lines.push_back("");
  return lines;
}

std::string function_row_text(double self_share, uint64_t self, double total_share, uint64_t total,
                              const std::string& function, const std::string& module) {
  return share_and_count(self_share, self) + " " + share_and_count(total_share, total) + "  " + function + "  " +
         file_name(module);
}

std::vector<std::string> function_report_lines(const std::vector<FunctionRow>& rows, const ProfileSelection& selection,
                                               size_t top) {
  std::vector<std::string> lines{kFunctionReportHeader};
  table_rows(
      lines, rows, top, selection, "functions",
      [&](const FunctionRow& row) {
        return function_row_text(selection.share(row.self), row.self, selection.share(row.total), row.total, row.name,
                                 row.module);
      },
      [](const FunctionRow& row) { return row.self; });
  return lines;
}

std::vector<std::string> caller_report_lines(const std::vector<CallerPath>& paths, const ProfileSelection& selection,
                                             size_t top) {
  std::vector<std::string> lines{"   Share  Samples  Call path (root -> leaf)"};
  table_rows(
      lines, paths, top, selection, "call paths",
      [&](const CallerPath& path) {
        std::string text = stack_is_whole(stack_end_from_name(path.end).value_or(StackEnd::complete))
                               ? ""
                               : "[" + path.end + "] ... -> ";
        for (size_t frame = 0; frame < path.names.size(); ++frame) {
          text += (frame == 0 ? "" : " -> ") + path.names[frame];
        }
        return share_and_count(selection.share(path.samples), path.samples) + "  " + text;
      },
      [](const CallerPath& path) { return path.samples; });
  return lines;
}

std::vector<std::string> line_report_lines(const LineReport& report, const ProfileSelection& selection, size_t top) {
  std::vector<std::string> lines{"   Share  Samples  Line  Function  Module"};
  table_rows(
      lines, report.lines, top, selection, "lines",
      [&](const LineRow& row) {
        return share_and_count(selection.share(row.samples), row.samples) + "  " + row.file + ":" +
               std::to_string(row.line) + "  " + row.function + "  " + file_name(row.module);
      },
      [](const LineRow& row) { return row.samples; });
  unresolved_lines(lines, report.unresolved, report.unresolved_samples, selection);
  return lines;
}

std::vector<std::string> block_report_lines(const BlockReport& report, const ProfileSelection& selection, size_t top) {
  std::vector<std::string> lines{"   Share  Samples  Block                    Instructions  Function  Module"};
  table_rows(
      lines, report.blocks, top, selection, "blocks",
      [&](const BlockRow& row) {
        return share_and_count(selection.share(row.samples), row.samples) + "  " +
               pad_right("[" + hex(row.start) + ", " + hex(row.end) + ")", 24) + " " +
               pad_left(std::to_string(row.instructions), 12) + "  " + row.function + "  " + file_name(row.module);
      },
      [](const BlockRow& row) { return row.samples; });
  unresolved_lines(lines, report.unresolved, report.unresolved_samples, selection);
  return lines;
}

std::vector<std::string> annotation_lines(const Annotation& annotation, bool percent_function) {
  std::vector<std::string> lines;
  lines.push_back("# " + annotation.name + " in " + annotation.module + " [" + hex(annotation.start) + ", " +
                  hex(annotation.end) + "): " + std::to_string(annotation.function_samples) + " samples (" +
                  share_text(share_of(annotation.function_samples, annotation.profile_samples)) + " of the capture's " +
                  std::to_string(annotation.profile_samples) + ")");
  lines.push_back(std::string("# shares are of ") +
                  (percent_function ? "the function's " + std::to_string(annotation.function_samples) + " samples"
                                    : "the capture's " + std::to_string(annotation.profile_samples) + " samples") +
                  "; > marks the hottest instruction" +
                  (annotation.has_lines ? "" : "; no DWARF line table for it"));
  if (annotation.kernel_samples != 0) {
    lines.push_back("# " + std::to_string(annotation.kernel_samples) +
                    " more samples were taken in the kernel, entered from this function");
  }
  if (annotation.unplaced_samples != 0) {
    lines.push_back("# " + std::to_string(annotation.unplaced_samples) +
                    " samples at addresses no decoded instruction starts at");
  }
  for (const std::string& unreadable : annotation.unreadable_sources) {
    lines.push_back("# source not shown: " + unreadable);
  }
  lines.push_back("");
  lines.push_back("     Share  Samples  Address           Instruction                               Source");
  for (const AnnotatedInstruction& row : annotation.instructions) {
    if (row.source_text && row.line) {
      // The line's text above its first instruction, as objdump -S shows it.
      std::string text;
      for (char c : *row.source_text) text += c == '\t' ? std::string("    ") : std::string(1, c);
      lines.push_back(std::string(21, ' ') + file_name(row.line->file) + ":" + std::to_string(row.line->line) +
                      "  " + text);
      while (!lines.back().empty() && lines.back().back() == ' ') lines.back().pop_back();
    }
    std::string line = row.hottest ? "> " : "  ";
    line += row.samples == 0 ? std::string(17, ' ')
                             : share_and_count(share_of(row.samples, annotation.share_base), row.samples);
    line += "  " + pad_right(hex(row.address), 16) + "  " + pad_right(row.text, 40);
    if (row.line) line += "  " + file_name(row.line->file) + ":" + std::to_string(row.line->line);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  if (annotation.hidden_instructions != 0) {
    lines.push_back("... " + std::to_string(annotation.hidden_instructions) +
                    " instructions under --min-samples not shown");
  }
  return lines;
}

std::vector<std::string> diff_lines(const ProfileDiff& diff, const std::string& before, const std::string& after,
                                    double min_delta_points) {
  std::vector<std::string> lines;
  lines.push_back("# before: " + before + ", " + std::to_string(diff.before_samples) + " samples; after: " + after +
                  ", " + std::to_string(diff.after_samples) + " samples");
  lines.push_back(diff.across_builds
                      ? "# different builds (build-id " + diff.before_build_id + ", then " + diff.after_build_id +
                            "): the executable's functions matched by name"
                      : "# the same build: functions matched by build-id and address");
  lines.push_back("# self share of each capture's samples; change in points");
  lines.push_back("");
  lines.push_back("  Before    After   Change  Function  Module");
  for (const DiffRow& row : diff.rows) {
    char change[32];
    std::snprintf(change, sizeof change, "%+.2f", row.change_points());
    std::string note;
    if (row.matched_by == "before_only") note = "  (only before)";
    if (row.matched_by == "after_only") note = "  (only after)";
    if (row.matched_by == "name") note = "  (by name)";
    lines.push_back(pad_left(share_text(row.before_share), 8) + " " + pad_left(share_text(row.after_share), 8) + " " +
                    pad_left(change, 8) + "  " + row.name + "  " + file_name(row.module) + note);
  }
  if (diff.filtered != 0) {
    char delta[32];
    std::snprintf(delta, sizeof delta, "%.2f", min_delta_points);
    lines.push_back("... " + std::to_string(diff.filtered) + " functions changing less than " + delta +
                    " points not shown (--min-delta)");
  }
  return lines;
}

}  // namespace xref::render
