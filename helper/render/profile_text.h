// A profile's reports as text, in the shape of perf report's tables: the
// share, the samples, the name and the module (its file name; JSON has the
// path). Every report starts with the capture's header: the event and its
// frequency, how long, how many samples, whether every stack is whole, and
// every loss; and says how many rows it did not show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xprof/annotate.h"
#include "xprof/block_report.h"
#include "xprof/caller_report.h"
#include "xprof/function_report.h"
#include "xprof/line_report.h"
#include "xprof/profile_diff.h"
#include "xprof/selection.h"

namespace xref::render {

// "45.12%".
std::string share_text(double share);

std::vector<std::string> profile_header_lines(const Profile& profile, const ProfileSelection& selection);

// The function table's header and one of its rows: the self and total
// shares and samples, the function, the module's file name.
inline constexpr const char* kFunctionReportHeader = "    Self  Samples    Total  Samples  Function  Module";
std::string function_row_text(double self_share, uint64_t self, double total_share, uint64_t total,
                              const std::string& function, const std::string& module);
// Each shows the first `top` rows (0: all) and counts the rest.
std::vector<std::string> function_report_lines(const std::vector<FunctionRow>& rows, const ProfileSelection& selection,
                                               size_t top);
std::vector<std::string> caller_report_lines(const std::vector<CallerPath>& paths, const ProfileSelection& selection,
                                             size_t top);
std::vector<std::string> line_report_lines(const LineReport& report, const ProfileSelection& selection, size_t top);
std::vector<std::string> block_report_lines(const BlockReport& report, const ProfileSelection& selection, size_t top);

std::vector<std::string> annotation_lines(const Annotation& annotation, bool percent_function);

std::vector<std::string> diff_lines(const ProfileDiff& diff, const std::string& before, const std::string& after,
                                    double min_delta_points);

}  // namespace xref::render
