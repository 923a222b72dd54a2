#include "xprof/profile_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "xprof/frames.h"
#include "xprof/function_report.h"

namespace xref {
namespace {

struct Side {
  std::vector<FunctionRow> rows;
  uint64_t samples = 0;
};

std::string build_id_of(const Profile& profile, const FrameKey& key) {
  uint32_t module = key.module;
  if (key.kind == FrameKey::Kind::function) module = profile.functions[key.function].module;
  return module < profile.modules.size() ? profile.modules[module].build_id : "";
}

// The same code in both: the module's build-id and the address.
std::string address_key(const Profile& profile, const FunctionRow& row) {
  if (row.key.kind == FrameKey::Kind::kernel) return "[kernel]";
  const std::string build_id = build_id_of(profile, row.key);
  if (build_id.empty()) return "";
  const uint64_t address =
      row.key.kind == FrameKey::Kind::function ? profile.functions[row.key.function].start : row.key.address;
  return build_id + "@" + std::to_string(address);
}

// The same function of another build: the name, in the executable (whose
// file is often renamed with a new build: ./app, ./app-new) or in the
// module of the same file name.
std::string name_key(const Profile& profile, const FunctionRow& row) {
  if (row.key.kind == FrameKey::Kind::address) return "";  // an address names nothing across builds
  if (row.key.kind == FrameKey::Kind::function && !function_has_symbol(profile, profile.functions[row.key.function])) {
    return "";  // nor does a function's start (app_stripped+0x1230)
  }
  if (row.key.kind == FrameKey::Kind::function && profile.functions[row.key.function].module == executable_module(profile)) {
    return "[executable]\n" + row.name;
  }
  const std::string file = row.module.substr(row.module.rfind('/') + 1);
  return file + "\n" + row.name;
}

}  // namespace

Result<ProfileDiff> diff_profiles(const Profile& before, const Profile& after, const DiffOptions& options) {
  ProfileDiff diff;
  const auto exe_build = [](const Profile& profile) {
    const auto module = executable_module(profile);
    return module ? profile.modules[*module].build_id : std::string();
  };
  diff.before_build_id = exe_build(before);
  diff.after_build_id = exe_build(after);
  diff.across_builds = diff.before_build_id != diff.after_build_id;
  if (diff.across_builds && options.other_path.empty()) {
    return make_error(ErrorCode::capture_mismatch,
                      "the captures are of different builds of the executable (build-id " +
                          (diff.before_build_id.empty() ? "none" : diff.before_build_id) + ", then " +
                          (diff.after_build_id.empty() ? "none" : diff.after_build_id) + ")",
                      "give --other with the second capture's executable to match functions by name across builds");
  }
  if (!options.other_path.empty() && options.other_build_id != diff.after_build_id) {
    return make_error(ErrorCode::capture_mismatch,
                      "--other " + options.other_path + " has build-id " +
                          (options.other_build_id.empty() ? "none" : options.other_build_id) +
                          ", not the second capture's " + (diff.after_build_id.empty() ? "none" : diff.after_build_id),
                      "give --other the executable the second capture was taken of");
  }
  Side sides[2];
  const Profile* profiles[2] = {&before, &after};
  for (int side = 0; side < 2; ++side) {
    auto selection = select_samples(*profiles[side]);
    if (!selection) {
      Error error = selection.error();
      error.message = (side == 0 ? "the first capture: " : "the second capture: ") + error.message;
      return error;
    }
    sides[side].rows = function_rows(*profiles[side], *selection);
    sides[side].samples = selection->samples;
  }
  diff.before_samples = sides[0].samples;
  diff.after_samples = sides[1].samples;

  std::vector<bool> after_taken(sides[1].rows.size(), false);
  std::map<std::string, size_t> by_address;
  std::map<std::string, size_t> by_name;
  for (size_t index = 0; index < sides[1].rows.size(); ++index) {
    const std::string address = address_key(after, sides[1].rows[index]);
    if (!address.empty()) by_address.emplace(address, index);
    const std::string name = name_key(after, sides[1].rows[index]);
    if (!name.empty()) by_name.emplace(name, index);
  }
  const auto share = share_of;
  std::vector<DiffRow> rows;
  // Addresses first over every row, then names over what is left.
  std::vector<std::optional<size_t>> match(sides[0].rows.size());
  for (size_t index = 0; index < sides[0].rows.size(); ++index) {
    const auto found = by_address.find(address_key(before, sides[0].rows[index]));
    if (found != by_address.end() && !after_taken[found->second]) {
      match[index] = found->second;
      after_taken[found->second] = true;
    }
  }
  std::vector<std::string> matched_by(sides[0].rows.size(), "address");
  for (size_t index = 0; index < sides[0].rows.size(); ++index) {
    if (match[index]) continue;
    const auto found = by_name.find(name_key(before, sides[0].rows[index]));
    if (found != by_name.end() && !after_taken[found->second]) {
      match[index] = found->second;
      after_taken[found->second] = true;
      matched_by[index] = "name";
    }
  }
  for (size_t index = 0; index < sides[0].rows.size(); ++index) {
    const FunctionRow& a = sides[0].rows[index];
    DiffRow row{a.name, a.module, a.self, 0, share(a.self, diff.before_samples), 0, "before_only"};
    if (match[index]) {
      const FunctionRow& b = sides[1].rows[*match[index]];
      row.module = b.module;
      row.after_samples = b.self;
      row.after_share = share(b.self, diff.after_samples);
      row.matched_by = matched_by[index];
    }
    rows.push_back(std::move(row));
  }
  for (size_t index = 0; index < sides[1].rows.size(); ++index) {
    if (after_taken[index]) continue;
    const FunctionRow& b = sides[1].rows[index];
    rows.push_back({b.name, b.module, 0, b.self, 0, share(b.self, diff.after_samples), "after_only"});
  }
  for (DiffRow& row : rows) {
    // Rows neither side sampled itself (only totals) say nothing here.
    if (row.before_samples == 0 && row.after_samples == 0) continue;
    if (std::fabs(row.change_points()) < options.min_delta_points) {
      ++diff.filtered;
      continue;
    }
    diff.rows.push_back(std::move(row));
  }
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    const double ca = std::fabs(a.change_points());
    const double cb = std::fabs(b.change_points());
    if (ca != cb) return ca > cb;
    return a.name < b.name;
  });
  return diff;
}

}  // namespace xref
