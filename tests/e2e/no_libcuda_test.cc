// The CLI must start on machines without the NVIDIA driver, so it may not depend on libcuda
// (or libcudart, which needs it): the driver is reached only through dlopen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace dietcode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NoLibcuda, CliHasNoDriverOrRuntimeDependency) {
  FILE* pipe = popen("readelf -d '" DIETCODE_CLI_PATH "' 2>&1", "r");
  ASSERT_NE(pipe, nullptr);
  std::string dynamic;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) dynamic.append(buffer, n);
  int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << dynamic;
  ASSERT_THAT(dynamic, HasSubstr("(NEEDED)"));  // readelf read the dynamic section
  EXPECT_THAT(dynamic, Not(HasSubstr("libcuda")));
  EXPECT_THAT(dynamic, Not(HasSubstr("libcudart")));
}

}  // namespace
}  // namespace dietcode
