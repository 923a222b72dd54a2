#include "xprof/profile.h"

#include <array>
#include <utility>

namespace xref {
namespace {

constexpr std::array<std::pair<StackEnd, const char*>, 11> kStackEndNames{{
    {StackEnd::complete, "complete"},
    {StackEnd::leaf_only, "leaf_only"},
    {StackEnd::truncated, "truncated"},
    {StackEnd::no_mapping, "no_mapping"},
    {StackEnd::table_pending, "table_pending"},
    {StackEnd::no_cfi, "no_cfi"},
    {StackEnd::unsupported_rule, "unsupported_rule"},
    {StackEnd::read_failed, "read_failed"},
    {StackEnd::bad_frame, "bad_frame"},
    {StackEnd::no_user_regs, "no_user_regs"},
    {StackEnd::table_no_room, "table_no_room"},
}};

}  // namespace

const char* stack_end_name(StackEnd end) {
  for (const auto& [value, name] : kStackEndNames) {
    if (value == end) return name;
  }
  return "unknown";
}

std::optional<StackEnd> stack_end_from_name(const std::string& name) {
  for (const auto& [value, text] : kStackEndNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

uint64_t Profile::total_samples() const {
  uint64_t total = 0;
  for (const ProfileSample& sample : samples) total += sample.count;
  return total;
}

bool Profile::complete() const {
  if (losses.throttled != 0 || losses.stacks_full != 0 || losses.counts_full != 0 || losses.requests_lost != 0) {
    return false;
  }
  for (const ProfileStack& stack : stacks) {
    if (!stack_is_whole(stack.end)) return false;
  }
  return true;
}

}  // namespace xref
