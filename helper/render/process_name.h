// A process as text names it: its comm, unless the kernel cut the comm at 15
// bytes and the executable's file name says the rest ("string_target-g" is
// string_target-gcc).
#pragma once

#include <string>

namespace xref::render {

std::string process_name(const std::string& comm, const std::string& exe_path);

}  // namespace xref::render
