#include "serve/watch_prepare.h"

#include <string>
#include <vector>

#include "number_parse.h"
#include "watch/debugger_expressions.h"

namespace xref::serve {
namespace {

ProtocolError malformed(const std::string& message) {
  return protocol_error("invalid_request", message, "the front end's answer to prepare.evaluate is malformed");
}

// An address as the protocol spells them: "0x..." or a non-negative integer.
std::optional<uint64_t> address_of(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
  if (!value.is_string()) return std::nullopt;
  auto parsed = parse_u64(value.get<std::string>(), "address");
  return parsed ? std::optional<uint64_t>(*parsed) : std::nullopt;
}

}  // namespace

nlohmann::json watch_evaluate_list(const SessionSpec& spec) {
  nlohmann::json list = nlohmann::json::array();
  if (spec.command != "watch") return list;
  auto expressions = watch_expressions(spec.watch.request);
  if (!expressions) return list;  // parse_session_start refused it already
  for (const WatchExpression& expression : *expressions) {
    list.push_back({{"index", expression.index},
                    {"expression", expression.expression},
                    {"location", expression.location},
                    {"count", expression.count},
                    {"for", expression.follow ? "follow" : "address"}});
  }
  return list;
}

std::optional<ProtocolError> apply_watch_evaluations(SessionSpec& spec, const nlohmann::json& prepared) {
  if (spec.command != "watch") return std::nullopt;
  auto expressions = watch_expressions(spec.watch.request);
  if (!expressions) return cli_error(expressions.error());
  if (expressions->empty()) return std::nullopt;
  const auto list = prepared.find("evaluated");
  if (list == prepared.end() || !list->is_array()) {
    return malformed("prepared.evaluated must be an array: one {index, address, size, type, error} per expression");
  }
  std::vector<EvaluatedExpression> evaluated;
  for (size_t at = 0; at < list->size(); ++at) {
    const nlohmann::json& entry = (*list)[at];
    const std::string where = "prepared.evaluated[" + std::to_string(at) + "]";
    if (!entry.is_object() || !entry.contains("index") || !entry["index"].is_number_unsigned()) {
      return malformed(where + " must be an object with an index");
    }
    EvaluatedExpression answer;
    answer.index = entry["index"].get<uint32_t>();
    const nlohmann::json error = entry.value("error", nlohmann::json());
    if (error.is_string()) {
      std::string line = error.get<std::string>();
      if (const size_t newline = line.find('\n'); newline != std::string::npos) line.resize(newline);
      answer.error = line.empty() ? std::string("the debugger could not evaluate it") : line;
    } else if (!error.is_null()) {
      return malformed(where + ".error must be null or a string");
    } else {
      const auto address = address_of(entry.value("address", nlohmann::json()));
      if (!address) return malformed(where + ".address must be \"0x...\" or a non-negative integer");
      answer.address = *address;
      const nlohmann::json size = entry.value("size", nlohmann::json(0));
      if (!size.is_number_unsigned() && !(size.is_number_integer() && size.get<int64_t>() == 0)) {
        return malformed(where + ".size must be a non-negative integer");
      }
      answer.size = size.get<uint64_t>();
      const nlohmann::json type = entry.value("type", nlohmann::json());
      if (type.is_string()) answer.type = type.get<std::string>();
    }
    evaluated.push_back(std::move(answer));
  }
  if (auto applied = apply_evaluations(spec.watch.request, *expressions, evaluated); !applied) {
    return cli_error(applied.error());
  }
  return std::nullopt;
}

}  // namespace xref::serve
