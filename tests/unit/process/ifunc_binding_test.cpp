// How refusals name a GNU IFUNC's code: the implementation the process bound.
#include "process/ifunc_binding.h"

#include <gtest/gtest.h>

namespace xref {
namespace {

TEST(BoundCodeName, AnIfuncIsNamedWithTheImplementationBound) {
  EXPECT_EQ(bound_code_name("strlen", "__strlen_evex") + " did not disassemble cleanly",
            "strlen is bound to __strlen_evex here, and __strlen_evex did not disassemble cleanly");
}

TEST(BoundCodeName, AnyOtherFunctionIsItsOwnName) { EXPECT_EQ(bound_code_name("malloc", ""), "malloc"); }

}  // namespace
}  // namespace xref
