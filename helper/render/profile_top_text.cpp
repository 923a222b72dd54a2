#include "render/profile_top_text.h"

#include "render/json_fields.h"
#include "render/place_text.h"
#include "render/profile_text.h"

namespace xref::render {

std::vector<std::string> profile_top_lines(const nlohmann::json& top, Names& names) {
  if (!top.is_object()) return {};
  std::vector<std::string> lines{kFunctionReportHeader};
  for (const nlohmann::json& row : top.value("rows", nlohmann::json::array())) {
    if (!row.is_object()) continue;
    std::string function = row.value("name", std::string("?"));
    std::optional<Place> place;
    if (const auto live = address_at(row, "live")) place = names.place({"", std::nullopt, live});
    // The function as the names spell it, and the line of its hottest address.
    if (place && !place->function.empty()) function = place->function;
    function += line_text(place);
    lines.push_back(function_row_text(row.value("self_share", 0.0), row.value("self", uint64_t{0}),
                                      row.value("total_share", 0.0), row.value("total", uint64_t{0}), function,
                                      row.value("module", std::string())));
  }
  const uint64_t hidden_rows = top.value("rows_not_shown", uint64_t{0});
  if (hidden_rows != 0) {
    const uint64_t hidden = top.value("samples_not_shown", uint64_t{0});
    const uint64_t samples = top.value("samples", uint64_t{0});
    lines.push_back("... " + std::to_string(hidden_rows) + " more functions (" + std::to_string(hidden) + " samples, " +
                    share_text(samples == 0 ? 0.0 : static_cast<double>(hidden) / static_cast<double>(samples)) +
                    ") not shown; `xref profile report` shows them");
  }
  return lines;
}

std::vector<uint64_t> profile_top_addresses(const nlohmann::json& top) {
  std::vector<uint64_t> addresses;
  if (!top.is_object()) return addresses;
  for (const nlohmann::json& row : top.value("rows", nlohmann::json::array())) {
    if (const auto live = address_at(row, "live")) addresses.push_back(*live);
  }
  return addresses;
}

}  // namespace xref::render
