// The data of the JSON documents of profile_report, profile_annotate and
// profile_diff (docs/json.md); the envelope is output/'s. Shares are
// percentages (45.12), as the text prints them; addresses hex strings.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "xprof/annotate.h"
#include "xprof/block_report.h"
#include "xprof/caller_report.h"
#include "xprof/function_report.h"
#include "xprof/line_report.h"
#include "xprof/profile_diff.h"
#include "xprof/selection.h"

namespace xref::render {

// What every report's data starts with: the capture's parameters, its
// samples, the selection (--within), incomplete stacks and losses.
nlohmann::json profile_summary_json(const Profile& profile, const ProfileSelection& selection);

// `rows` of each report: the first `top` (0: all); the rest counted in
// `rows_not_shown` and `samples_not_shown` of `data`.
void function_report_json(nlohmann::json& data, const Profile& profile, const std::vector<FunctionRow>& rows,
                          const ProfileSelection& selection, size_t top);
void caller_report_json(nlohmann::json& data, const std::vector<CallerPath>& paths, const ProfileSelection& selection,
                        size_t top);
void line_report_json(nlohmann::json& data, const LineReport& report, const ProfileSelection& selection, size_t top);
void block_report_json(nlohmann::json& data, const BlockReport& report, const ProfileSelection& selection, size_t top);

nlohmann::json annotation_json(const Annotation& annotation, bool percent_function);
nlohmann::json diff_json(const ProfileDiff& diff, const std::string& before, const std::string& after,
                         double min_delta_points);

}  // namespace xref::render
