#include "render/process_name.h"

#include <gtest/gtest.h>

namespace xref::render {
namespace {

// The kernel keeps 15 bytes of a comm: the file name says the rest.
TEST(ProcessName, ACutCommIsCompletedFromTheExecutablesName) {
  EXPECT_EQ(process_name("string_target-g", "/build/tests/targets/string_target-gcc"), "string_target-gcc");
  EXPECT_EQ(process_name("redis-server", "/usr/bin/redis-check-rdb"), "redis-server");
  // Not a prefix of the file (a thread renamed itself): the comm as it is.
  EXPECT_EQ(process_name("worker-pool-012", "/usr/bin/service"), "worker-pool-012");
  // A file replaced while the process ran.
  EXPECT_EQ(process_name("string_target-g", "/t/string_target-gcc (deleted)"), "string_target-g");
}

}  // namespace
}  // namespace xref::render
