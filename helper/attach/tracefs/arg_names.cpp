#include "attach/tracefs/arg_names.h"

#include <algorithm>

namespace xref {

std::string tracefs_free_arg_name(std::span<const FetchItem> fetches, const std::string& preferred) {
  std::string name = preferred;
  while (std::any_of(fetches.begin(), fetches.end(), [&](const FetchItem& item) { return item.name == name; })) {
    name = "xref_" + name;
  }
  return name;
}

}  // namespace xref
