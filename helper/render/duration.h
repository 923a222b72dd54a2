// Durations for people, in the ASCII units perf and uftrace print:
// "812 ns", "3.4 us", "2.61 ms", "1.25 s".
#pragma once

#include <cstdint>
#include <string>

namespace xref::render {

std::string duration_text(uint64_t ns);

}  // namespace xref::render
