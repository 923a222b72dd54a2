#include "xprof/selection.h"

#include <algorithm>

#include "xprof/frames.h"

namespace xref {

double share_of(uint64_t count, uint64_t total) {
  return total == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(total);
}

double ProfileSelection::share(uint64_t count) const { return share_of(count, samples); }

Result<ProfileSelection> select_samples(const Profile& profile, const std::string& within) {
  ProfileSelection selection;
  selection.within = within;
  selection.counts.assign(profile.stacks.size(), 0);
  for (const ProfileSample& sample : profile.samples) {
    selection.counts.at(sample.stack) += sample.count;
    selection.profile_samples += sample.count;
  }
  if (selection.profile_samples == 0) {
    return make_error(ErrorCode::empty_capture, "the capture holds no sample",
                      "profile longer, or while the process runs on a CPU (a sleeping process takes no samples)");
  }
  if (!within.empty()) {
    selection.within_functions = functions_named(profile, within);
    if (selection.within_functions.empty()) {
      return make_error(ErrorCode::empty_capture, "--within " + within + ": no function of the capture is named so",
                        "give a function shown by `xref profile report FILE --by function`, or a 0xVA inside one");
    }
    for (size_t stack = 0; stack < profile.stacks.size(); ++stack) {
      const auto& locations = profile.stacks[stack].locations;
      const bool passes = std::any_of(locations.begin(), locations.end(), [&](uint32_t location) {
        const auto& function = profile.locations[location].function;
        return function && std::find(selection.within_functions.begin(), selection.within_functions.end(),
                                     *function) != selection.within_functions.end();
      });
      if (!passes) selection.counts[stack] = 0;
    }
  }
  for (size_t stack = 0; stack < profile.stacks.size(); ++stack) {
    const uint64_t count = selection.counts[stack];
    selection.samples += count;
    if (count == 0) continue;
    if (profile.stacks[stack].in_kernel) selection.in_kernel += count;
    if (!stack_is_whole(profile.stacks[stack].end)) {
      selection.incomplete += count;
      selection.incomplete_by_end[stack_end_name(profile.stacks[stack].end)] += count;
    }
  }
  if (selection.samples == 0) {
    return make_error(ErrorCode::empty_capture, "no sample's stack passes through " + within,
                      "leave out --within, or name a function the report --by function shows with total samples");
  }
  return selection;
}

}  // namespace xref
