// A code address as people read it: "handle_request+0x84 at sample_service.c:172",
// from the Names when they know it, else from what the JSON carries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "render/names.h"

namespace xref::render {

// What the JSON says about an address when no Names know it: the function
// holding it (a caller, a symbol) and its start, when given.
struct JsonPlace {
  std::string function;
  std::optional<uint64_t> function_va;
};

// "fn+0x84 at file.c:172" ("fn" at its start; the file's base name), else
// "libc.so.6:0x1c20", else the live address, else "?".
std::string place_text(const std::optional<Place>& place, const CodeAddress& address, const JsonPlace& json = {});
// place_text of what `names` say of `address`; "" when they know nothing of it.
std::string known_place_text(Names& names, const CodeAddress& address);
// " at file.c:172" for a place with a line, else "".
std::string line_text(const std::optional<Place>& place);
// `address` added to the list a front end is asked to name, once, unless it says nothing.
void add_code_address(std::vector<CodeAddress>& addresses, const CodeAddress& address);
// "0x1c20" or "libc.so.6:0x1c20"; "" when the static VA is unknown.
std::string static_text(const CodeAddress& address);

}  // namespace xref::render
