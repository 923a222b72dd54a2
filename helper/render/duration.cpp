#include "render/duration.h"

#include <cstdio>

namespace xref::render {

std::string duration_text(uint64_t ns) {
  // The unit is chosen after rounding, so 999.96 us reads "1.00 ms", never "1000.0 us".
  char text[32];
  const double value = static_cast<double>(ns);
  if (ns < 1000) {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 999'950) {
    std::snprintf(text, sizeof text, "%.1f us", value / 1e3);
  } else if (ns < 999'995'000) {
    std::snprintf(text, sizeof text, "%.2f ms", value / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", value / 1e9);
  }
  return text;
}

}  // namespace xref::render
