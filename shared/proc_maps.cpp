#include "proc_maps.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hex.h"
#include "ptrace_access.h"

namespace xref {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

bool take_hex(std::string_view& text, uint64_t& value) {
  size_t used = 0;
  value = 0;
  while (used < text.size()) {
    const char c = text[used];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else break;
    value = value * 16 + static_cast<uint64_t>(digit);
    ++used;
  }
  if (used == 0 || used > 16) return false;
  text.remove_prefix(used);
  return true;
}

bool take_decimal(std::string_view& text, uint64_t& value) {
  size_t used = 0;
  value = 0;
  while (used < text.size() && text[used] >= '0' && text[used] <= '9') {
    value = value * 10 + static_cast<uint64_t>(text[used] - '0');
    ++used;
  }
  if (used == 0) return false;
  text.remove_prefix(used);
  return true;
}

bool take_char(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

void skip_spaces(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
}

Result<MapEntry> parse_line(std::string_view line, int line_number) {
  const std::string_view original = line;
  auto fail = [&](const char* what) -> Error {
    Error error = make_error(ErrorCode::internal,
                             "maps line " + std::to_string(line_number) + ": " + what + ": " + std::string(original));
    error.column = static_cast<int>(original.size() - line.size()) + 1;
    return error;
  };
  MapEntry entry;
  uint64_t dev_major = 0, dev_minor = 0;
  if (!take_hex(line, entry.start) || !take_char(line, '-') || !take_hex(line, entry.end)) {
    return fail("bad address range");
  }
  if (entry.end <= entry.start) return fail("empty address range");
  if (!take_char(line, ' ') || line.size() < 4) return fail("bad permissions");
  entry.perms = std::string(line.substr(0, 4));
  line.remove_prefix(4);
  if (!take_char(line, ' ') || !take_hex(line, entry.offset)) return fail("bad offset");
  if (!take_char(line, ' ') || !take_hex(line, dev_major) || !take_char(line, ':') ||
      !take_hex(line, dev_minor)) {
    return fail("bad device");
  }
  if (!take_char(line, ' ') || !take_decimal(line, entry.inode)) return fail("bad inode");
  entry.dev_major = static_cast<uint32_t>(dev_major);
  entry.dev_minor = static_cast<uint32_t>(dev_minor);
  // The path is everything after the padding, spaces included.
  skip_spaces(line);
  std::string_view path = line;
  if (entry.inode != 0 && path.size() > kDeletedSuffix.size() &&
      path.substr(path.size() - kDeletedSuffix.size()) == kDeletedSuffix) {
    entry.deleted = true;
    path.remove_suffix(kDeletedSuffix.size());
  }
  entry.path = std::string(path);
  return entry;
}

}  // namespace

std::string MapEntry::label() const { return path.empty() ? "[anonymous]" : path; }

std::string MapEntry::unescaped_path() const {
  std::string decoded;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.compare(i, 4, "\\012") == 0) {
      decoded.push_back('\n');
      i += 3;
    } else {
      decoded.push_back(path[i]);
    }
  }
  return decoded;
}

Result<std::vector<MapEntry>> parse_maps(std::string_view text) {
  std::vector<MapEntry> entries;
  int line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    if (line.empty()) continue;
    auto entry = parse_line(line, line_number);
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  return entries;
}

Result<std::vector<MapEntry>> read_maps(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream file(path);
  if (!file) {
    const int saved = errno;
    if (saved == ENOENT || saved == ESRCH) {
      return make_error(ErrorCode::process_exited, "process " + std::to_string(pid) + " has exited");
    }
    if (saved == EACCES || saved == EPERM) return ptrace_access_denied(pid, path, saved);
    return make_error(ErrorCode::file_error, path + ": " + std::strerror(saved));
  }
  std::ostringstream content;
  content << file.rdbuf();
  return parse_maps(content.str());
}

const MapEntry* find_mapping(const std::vector<MapEntry>& maps, uint64_t va) {
  auto it = std::upper_bound(maps.begin(), maps.end(), va,
                             [](uint64_t value, const MapEntry& entry) { return value < entry.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return it->contains(va) ? &*it : nullptr;
}

}  // namespace xref
