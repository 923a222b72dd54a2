// What a capture says about itself on stdout: the live_profile document's
// data (docs/profile.md, "Output"): what was sampled and why, for how
// long, which threads, how many samples and how whole their stacks are,
// what was lost, each module's unwind table, where the file went and the
// command that reads it. The text view is render/profile_capture_text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profile/capture.h"

namespace xref {

nlohmann::json capture_summary_json(const Capture& capture, const std::string& file);

}  // namespace xref
