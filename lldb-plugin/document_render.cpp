#include "document_render.h"

#include <cstdio>

namespace xref::lldb_plugin {
namespace {

using Lines = std::vector<std::string>;

std::string text(const nlohmann::json& object, const char* key, const std::string& otherwise = "") {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return otherwise;
  return found->is_string() ? found->get<std::string>() : found->dump();
}

std::string padded(const std::string& value, size_t width) {
  return value.size() >= width ? value : value + std::string(width - value.size(), ' ');
}

void process_line(const nlohmann::json& process, Lines& lines) {
  if (!process.is_object()) return;
  lines.push_back("pid " + text(process, "pid") + "  comm " + text(process, "comm") + "  exe " +
                  text(process, "exe_path") + "  match " + text(process, "binary_match"));
}

void maps(const nlohmann::json& data, Lines& lines) {
  lines.push_back("modules:");
  for (const auto& module : data.value("modules", nlohmann::json::array())) {
    std::string line = "  " + padded(text(module, "name"), 24) + " ";
    if (module.contains("image_error")) {
      line += "(" + text(module, "image_error") + ")";
    } else {
      line += "load_bias " + padded(text(module, "load_bias", "?"), 16) + "  " + text(module, "path");
      if (module.value("main_executable", false)) line += "  [main]";
    }
    lines.push_back(line);
  }
  lines.push_back("mappings:");
  for (const auto& mapping : data.value("mappings", nlohmann::json::array())) {
    std::string path = text(mapping, "path");
    if (path.empty()) path = "[anonymous]";
    char line[512];
    std::snprintf(line, sizeof line, "  %s-%s %s %10s  %s%s", text(mapping, "start").c_str(),
                  text(mapping, "end").c_str(), text(mapping, "perms").c_str(), text(mapping, "offset").c_str(),
                  path.c_str(), mapping.value("deleted", false) ? " (deleted)" : "");
    lines.push_back(line);
  }
}

void resolve(const nlohmann::json& data, Lines& lines) {
  for (const auto& address : data.value("addresses", nlohmann::json::array())) {
    std::string line = text(address, "live_va") + "  ";
    const nlohmann::json mapping = address.value("mapping", nlohmann::json());
    if (!mapping.is_object()) {
      lines.push_back(line + "not mapped in the process");
      continue;
    }
    line += text(mapping, "perms") + " " + text(mapping, "path", "[anonymous]") + "  " + text(address, "kind");
    if (address.contains("file_offset") && !address["file_offset"].is_null()) {
      line += "  file_offset " + text(address, "file_offset");
    }
    lines.push_back(line);
    for (const auto& candidate : address.value("candidates", nlohmann::json::array())) {
      std::string detail = "    " + text(candidate, "module") + " static " + text(candidate, "static_va");
      const nlohmann::json function = candidate.value("function", nlohmann::json());
      if (function.is_object()) {
        detail += "  " + text(function, "demangled", text(function, "name"));
        const std::string offset = text(function, "offset");
        if (!offset.empty() && offset != "0x0") detail += "+" + offset;
      }
      const nlohmann::json instruction = candidate.value("instruction", nlohmann::json());
      if (instruction.is_object()) {
        if (instruction.value("is_start", false)) {
          detail += "  [instruction start: " + text(instruction, "text") + "]";
        } else {
          detail += "  [MID-INSTRUCTION: inside the instruction at " + text(instruction, "start") + " (" +
                    text(instruction, "text") + ")]";
        }
      }
      lines.push_back(detail);
    }
  }
}

void doctor(const nlohmann::json& data, Lines& lines) {
  lines.push_back("kernel " + text(data, "kernel_release"));
  for (const auto& check : data.value("checks", nlohmann::json::array())) {
    lines.push_back(padded(text(check, "name"), 22) + padded(text(check, "status"), 8) + text(check, "detail"));
    const std::string hint = text(check, "hint");
    if (!hint.empty()) lines.push_back(std::string(30, ' ') + "hint: " + hint);
  }
}

}  // namespace

std::vector<std::string> render_document(const nlohmann::json& document) {
  Lines lines;
  const std::string operation = text(document, "operation");
  const nlohmann::json data = document.value("data", nlohmann::json());
  if (operation != "doctor") process_line(document.value("process", nlohmann::json()), lines);
  if (data.is_object()) {
    if (operation == "live_maps") maps(data, lines);
    else if (operation == "live_resolve") resolve(data, lines);
    else if (operation == "doctor") doctor(data, lines);
    else {
      std::string dump = data.dump(2);
      size_t start = 0;
      while (start < dump.size()) {
        size_t end = dump.find('\n', start);
        if (end == std::string::npos) end = dump.size();
        lines.push_back(dump.substr(start, end - start));
        start = end + 1;
      }
    }
  }
  for (const auto& warning : document.value("warnings", nlohmann::json::array())) {
    lines.push_back("xref: warning: " + (warning.is_string() ? warning.get<std::string>() : warning.dump()));
  }
  for (const auto& stop : document.value("stops", nlohmann::json::array())) {
    lines.push_back("xref: stopped early: " + (stop.is_string() ? stop.get<std::string>() : stop.dump()));
  }
  return lines;
}

std::string document_error(const nlohmann::json& document) {
  const nlohmann::json error = document.value("error", nlohmann::json());
  if (!error.is_object()) return {};
  std::string message = text(error, "message", "error");
  if (error.contains("column") && error["column"].is_number_integer() && error["column"].get<int>() > 0) {
    message += " (column " + std::to_string(error["column"].get<int>()) + ")";
  }
  const std::string hint = text(error, "hint");
  if (!hint.empty()) message += "; " + hint;
  return message;
}

}  // namespace xref::lldb_plugin
