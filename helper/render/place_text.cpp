#include "render/place_text.h"

#include <algorithm>

#include "demangle.h"
#include "hex.h"

namespace xref::render {
namespace {

std::string function_text(const std::string& function, uint64_t offset, bool as_spelled = false) {
  std::string text = as_spelled ? function : short_function_name(function);
  if (offset != 0) text += "+" + to_hex(offset);
  return text;
}

}  // namespace

std::string line_text(const std::optional<Place>& place) {
  if (!place || place->file.empty() || place->line == 0) return "";
  const size_t slash = place->file.rfind('/');
  return " at " + (slash == std::string::npos ? place->file : place->file.substr(slash + 1)) + ":" +
         std::to_string(place->line);
}

void add_code_address(std::vector<CodeAddress>& addresses, const CodeAddress& address) {
  if (!address.static_va && !address.live) return;
  if (std::find(addresses.begin(), addresses.end(), address) == addresses.end()) addresses.push_back(address);
}

std::string static_text(const CodeAddress& address) {
  if (!address.static_va) return "";
  return (address.module.empty() ? "" : address.module + ":") + to_hex(*address.static_va);
}

std::string place_text(const std::optional<Place>& place, const CodeAddress& address, const JsonPlace& json) {
  std::string text;
  if (place && !place->function.empty()) {
    text = function_text(place->function, place->offset, place->debugger);
  } else if (!json.function.empty() && json.function != "?") {
    const bool inside = json.function_va && address.static_va && *address.static_va >= *json.function_va;
    text = function_text(json.function, inside ? *address.static_va - *json.function_va : 0);
  } else if (address.static_va) {
    text = static_text(address);
  } else if (address.live) {
    text = to_hex(*address.live);
  } else {
    text = "?";
  }
  return text + line_text(place);
}

std::string known_place_text(Names& names, const CodeAddress& address) {
  const std::optional<Place> place = names.place(address);
  return place ? place_text(place, address) : std::string();
}

}  // namespace xref::render
