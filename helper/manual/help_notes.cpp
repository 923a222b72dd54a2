#include "manual/help_notes.h"

#include <sstream>

namespace xref::manual {
namespace {

constexpr const char* kExamples = "Examples:";
constexpr const char* kExitStatus = "Exit status:";
constexpr const char* kCommandIndent = "  ";
constexpr const char* kWhatIndent = "      ";

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

std::string footer_text(const HelpNotes& notes) {
  std::string text;
  for (const std::string& paragraph : notes.paragraphs) text += (text.empty() ? "" : "\n") + paragraph + "\n";
  if (!notes.examples.empty()) {
    text += std::string(text.empty() ? "" : "\n") + kExamples + "\n";
    for (const Example& example : notes.examples) {
      text += kCommandIndent + example.command + "\n";
      if (!example.what.empty()) text += kWhatIndent + example.what + "\n";
    }
  }
  if (!notes.exit_statuses.empty()) {
    text += std::string(text.empty() ? "" : "\n") + kExitStatus + "\n";
    for (const ExitStatus& status : notes.exit_statuses) {
      text += kCommandIndent + std::to_string(status.status) + "  " + status.meaning + "\n";
    }
  }
  return text;
}

HelpNotes parse_footer(const std::string& footer) {
  HelpNotes notes;
  enum class Part { paragraphs, examples, exit_statuses } part = Part::paragraphs;
  std::istringstream lines(footer);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line == kExamples) {
      part = Part::examples;
    } else if (line == kExitStatus) {
      part = Part::exit_statuses;
    } else if (part == Part::examples && starts_with(line, kWhatIndent) && !notes.examples.empty()) {
      notes.examples.back().what = line.substr(std::string(kWhatIndent).size());
    } else if (part == Part::examples && starts_with(line, kCommandIndent)) {
      notes.examples.push_back({line.substr(std::string(kCommandIndent).size()), ""});
    } else if (part == Part::exit_statuses && starts_with(line, kCommandIndent)) {
      const std::string rest = line.substr(std::string(kCommandIndent).size());
      const size_t gap = rest.find("  ");
      try {
        notes.exit_statuses.push_back({std::stoi(rest.substr(0, gap)), gap == std::string::npos ? "" : rest.substr(gap + 2)});
      } catch (const std::exception&) {
        notes.paragraphs.push_back(line);
      }
    } else {
      notes.paragraphs.push_back(line);
    }
  }
  return notes;
}

}  // namespace xref::manual
