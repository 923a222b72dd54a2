#include "render/fetch_text.h"

#include "output/json_envelope.h"
#include "render/json_fields.h"

namespace xref::render {

std::string string_text(const std::string& bytes, bool truncated, uint64_t bound) {
  std::string quoted = json_text(nlohmann::json(bytes));
  if (!truncated) return quoted;
  // The ellipsis inside the quotes: the string goes on past them.
  quoted.insert(quoted.size() - 1, "\u2026");
  return quoted + " (cut at " + std::to_string(bound) + " bytes)";
}

std::string fetch_text(const nlohmann::json& fetch) {
  std::string text = text_at(fetch, "name") + "=";
  if (const auto found = fetch.find("string"); found != fetch.end() && found->is_string()) {
    return text + string_text(found->get<std::string>(), fetch.value("truncated", false), count_or_zero(fetch, "length"));
  }
  if (const auto found = fetch.find("signed_value"); found != fetch.end() && found->is_number_integer()) {
    return text + std::to_string(found->get<int64_t>());
  }
  if (const std::string value = text_at(fetch, "value"); !value.empty()) return text + value;
  // The JSON's error is "unreadable: EFAULT (-14)"; text shows "<unreadable: EFAULT>".
  std::string error = text_at(fetch, "error");
  if (const size_t number = error.rfind(" ("); number != std::string::npos) error.resize(number);
  if (error.empty()) error = "unreadable";
  return text + "<" + error + ">";
}

std::string fetches_text(const nlohmann::json& fetches, bool skip_target) {
  std::string text;
  if (!fetches.is_array()) return text;
  for (const nlohmann::json& fetch : fetches) {
    if (skip_target && text_at(fetch, "name") == "target") continue;
    if (!text.empty()) text += ' ';
    text += fetch_text(fetch);
  }
  return text;
}

}  // namespace xref::render
