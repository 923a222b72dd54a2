#include "xprof/source_text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace xref {
namespace {

std::optional<std::vector<std::string>> read_lines(const std::string& file, std::string& why) {
  struct stat status {};
  if (stat(file.c_str(), &status) != 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(status.st_mode)) {
    why = "not a regular file";
    return std::nullopt;
  }
  if (static_cast<uint64_t>(status.st_size) > SourceTexts::kMaxFileBytes) {
    why = "larger than 16 MiB, not read";
    return std::nullopt;
  }
  std::ifstream in(file);
  if (!in) {
    why = "cannot be opened";
    return std::nullopt;
  }
  std::vector<std::string> lines;
  for (std::string text; std::getline(in, text);) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    lines.push_back(std::move(text));
  }
  return lines;
}

}  // namespace

std::optional<std::string> SourceTexts::line(const std::string& file, uint32_t line) {
  auto found = files_.find(file);
  if (found == files_.end()) {
    std::string why;
    found = files_.emplace(file, read_lines(file, why)).first;
    if (!found->second) unreadable_.push_back(file + ": " + why);
  }
  const auto& lines = found->second;
  if (!lines || line == 0 || line > lines->size()) return std::nullopt;
  return (*lines)[line - 1];
}

}  // namespace xref
