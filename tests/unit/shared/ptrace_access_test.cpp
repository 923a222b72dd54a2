#include "ptrace_access.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace xref {
namespace {

Error denied(const PtraceAccessContext& context) {
  return ptrace_access_denied(1, "/proc/1/exe", EACCES, context);
}

TEST(PtraceAccess, RootIsNeverToldToRunAsRoot) {
  const Error sandboxed = denied({true, true, true, "0"});
  EXPECT_EQ(sandboxed.code, ErrorCode::permission_denied);
  EXPECT_EQ(sandboxed.message,
            "cannot read /proc/1/exe: Permission denied, although xref runs as root with CAP_SYS_PTRACE");
  EXPECT_NE(sandboxed.hint.find("security module or sandbox"), std::string::npos) << sandboxed.hint;
  EXPECT_EQ(sandboxed.hint.find("as root"), std::string::npos) << sandboxed.hint;

  const Error no_capability = denied({true, false, true, "0"});
  EXPECT_NE(no_capability.message.find("without CAP_SYS_PTRACE"), std::string::npos) << no_capability.message;
  EXPECT_EQ(no_capability.hint.find("as root"), std::string::npos) << no_capability.hint;
}

TEST(PtraceAccess, AnotherUsersProcessNamesItsOwner) {
  const Error other = denied({false, false, false, "0"});
  EXPECT_EQ(other.message, "cannot read /proc/1/exe: Permission denied: process 1 belongs to uid 0");
  EXPECT_EQ(other.hint, "run xref as root or as uid 0");
  EXPECT_EQ(denied({false, false, false, ""}).hint, "run xref as root or as the target's user");

  const Error own = denied({false, false, true, "1000"});
  EXPECT_NE(own.message.find("of your own user"), std::string::npos) << own.message;
  EXPECT_NE(own.hint.find("not dumpable"), std::string::npos) << own.hint;
}

}  // namespace
}  // namespace xref
