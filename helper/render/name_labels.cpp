#include "render/name_labels.h"

#include <algorithm>
#include <map>

#include "demangle.h"

namespace xref::render {

NameLabels::NameLabels(const std::vector<std::string>& names) {
  std::map<std::string, std::string> first_full_name;
  for (const std::string& name : names) {
    const std::string short_name = short_function_name(name);
    auto [slot, inserted] = first_full_name.emplace(short_name, name);
    if (!inserted && slot->second != name &&
        std::find(ambiguous_.begin(), ambiguous_.end(), short_name) == ambiguous_.end()) {
      ambiguous_.push_back(short_name);
    }
  }
}

std::string NameLabels::operator()(const std::string& name) const {
  const std::string short_name = short_function_name(name);
  return std::find(ambiguous_.begin(), ambiguous_.end(), short_name) == ambiguous_.end() ? short_name : name;
}

}  // namespace xref::render
