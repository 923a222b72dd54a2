// "module:function" is split at the first single ':' outside brackets only:
// C++ scopes ("::") and ABI tags ("[abi:cxx11]") belong to the function.
#include <gtest/gtest.h>

#include "sites/function_names.h"

namespace xref {
namespace {

TEST(SplitModule, OnlyATopLevelSingleColonNamesAModule) {
  using Split = std::pair<std::string, std::string>;
  EXPECT_EQ(split_module("libc.so.6:strlen"), (Split{"libc.so.6", "strlen"}));
  EXPECT_EQ(split_module("libc.so.6:0x9f1c0"), (Split{"libc.so.6", "0x9f1c0"}));
  EXPECT_EQ(split_module("svc::settle"), (Split{"", "svc::settle"}));
  EXPECT_EQ(split_module("libfoo.so.1:ns::f(int)"), (Split{"libfoo.so.1", "ns::f(int)"}));
  EXPECT_EQ(split_module("lam_f(int)::{lambda(int)#1}::operator()"),
            (Split{"", "lam_f(int)::{lambda(int)#1}::operator()"}));
  EXPECT_EQ(split_module("ns::name[abi:cxx11](int)"), (Split{"", "ns::name[abi:cxx11](int)"}));
  EXPECT_EQ(split_module("/usr/lib/libfoo.so:std::map<int, int>::find"),
            (Split{"/usr/lib/libfoo.so", "std::map<int, int>::find"}));
}

}  // namespace
}  // namespace xref
