// Under sudo a target must be one the sudo user could ptrace: the ids on
// the Uid: and Gid: lines of /proc/PID/status as the kernel's
// __ptrace_may_access compares them, and dumpability.
#include "process/target_owner.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

std::string status(const std::string& uids, const std::string& gids) {
  return "\nName:\tapp\nUmask:\t0022\nUid:\t" + uids + "\nGid:\t" + gids + "\nGroups:\t\n";
}

const SudoUser kUser{1000, 1000, {1000, 27}};

std::string refusal(const std::string& text, bool dumpable = true) {
  auto checked = check_owner_in_status(text, dumpable, 42, kUser);
  if (checked) return "";
  EXPECT_EQ(checked.error().code, ErrorCode::sudo_user_cannot_ptrace) << checked.error().message;
  EXPECT_NE(checked.error().hint.find("uid 1000"), std::string::npos) << checked.error().hint;
  return checked.error().message;
}

TEST(TargetOwner, TheUsersOwnProcessIsATarget) {
  EXPECT_TRUE(check_owner_in_status(status("1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000"), true, 42, kUser));
  // Started under `sg sudo`: a group the user has.
  EXPECT_TRUE(check_owner_in_status(status("1000\t1000\t1000\t1000", "27\t27\t27\t27"), true, 42, kUser));
}

TEST(TargetOwner, EachRefusalNamesTheIdThatDiffers) {
  EXPECT_EQ(refusal(status("0\t0\t0\t0", "0\t0\t0\t0")),
            "process 42 belongs to uid 0: uid 1000, who ran xref through sudo, could not ptrace it");
  // A set-user-ID program the user started: real uid theirs, effective root.
  EXPECT_EQ(refusal(status("1000\t0\t0\t0", "1000\t1000\t1000\t1000")),
            "process 42 (uid 1000) runs with effective uid 0: uid 1000, who ran xref through sudo, could not ptrace it");
  // One that dropped to the user's uid but can take root back.
  EXPECT_EQ(refusal(status("1000\t1000\t0\t1000", "1000\t1000\t1000\t1000")),
            "process 42 (uid 1000) keeps saved uid 0, set-user-ID rights it can take back: uid 1000, who ran xref "
            "through sudo, could not ptrace it");
  EXPECT_EQ(refusal(status("1000\t1000\t1000\t1000", "1000\t42\t42\t42")),
            "process 42 (uid 1000) has real, effective and saved gid 1000, 42 and 42 (set-group-ID): uid 1000, who "
            "ran xref through sudo, could not ptrace it");
  EXPECT_EQ(refusal(status("1000\t1000\t1000\t1000", "42\t42\t42\t42")),
            "process 42 (uid 1000) runs as gid 42, not one of the user's groups: uid 1000, who ran xref through "
            "sudo, could not ptrace it");
  EXPECT_EQ(refusal(status("1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000"), false),
            "process 42 (uid 1000) is not dumpable (it changed its ids, or cleared PR_SET_DUMPABLE): uid 1000, who "
            "ran xref through sudo, could not ptrace it");
}

TEST(TargetOwner, AStatusWithoutIdsIsRefused) {
  for (const std::string& text : {std::string("\nName:\tx\n"), std::string("\nName:\tx\nUid:\t1000\t1000\t1000\t1000\n"),
                                  std::string("\nUid:\t1000\n")}) {
    auto checked = check_owner_in_status(text, true, 44, kUser);
    ASSERT_FALSE(checked) << text;
    EXPECT_EQ(checked.error().code, ErrorCode::permission_denied);
  }
}

// Without sudo (these tests run as plain root or another user without
// SUDO_UID acted on) every process may be opened.
TEST(TargetOwner, WithoutSudoEveryProcessIsATarget) { EXPECT_TRUE(check_target_owner(1)); }

}  // namespace
}  // namespace xref
