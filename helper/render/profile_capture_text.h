// A live capture's summary as text (docs/profile.md, "Output"), from the
// data of its live_profile document (profile/capture_summary.h): what was
// sampled and why, how long, the threads, how many samples and how whole
// their stacks are by reason, the losses, the unwind tables, the file and
// the command that reads it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xref::render {

std::vector<std::string> profile_capture_lines(const nlohmann::json& process, const nlohmann::json& data);

}  // namespace xref::render
