// Function names for text lines: as c++filt -p prints them (without the
// parameter list and a template's return type; demangle.h,
// short_function_name), unless two of the names given would then look the same.
#pragma once

#include <string>
#include <vector>

namespace xref::render {

class NameLabels {
 public:
  NameLabels() = default;
  explicit NameLabels(const std::vector<std::string>& names);
  std::string operator()(const std::string& name) const;

 private:
  std::vector<std::string> ambiguous_;  // short names shared by different full names
};

}  // namespace xref::render
