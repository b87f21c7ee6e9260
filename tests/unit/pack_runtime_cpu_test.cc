// The host-only logic of a CPU pack's runtime: which dispatcher serves a CPU of each x86-64
// level (pack_runtime_cpu.h), and the CPU level the runtime reads (pack_cpu_level.h).
#include "pack/runtime/pack_runtime_cpu.h"

#include <gtest/gtest.h>

#include "pack/runtime/pack_cpu_level.h"

namespace dietcode_pack {

const PackDesc kPack = {"cpu", "{}", nullptr, 0};

namespace {

int select_v4(const int64_t*) { return 4; }
int select_v3(const int64_t*) { return 3; }

OpDesc op_with(const ArchSelect* selects, int n) {
  return {"op", nullptr, 0, -1, -1, 4, nullptr, 0, selects, n, nullptr, nullptr, 0};
}

TEST(PackRuntimeCpu, EachLevelGetsTheDispatcherOfTheHighestLevelItHas) {
  const ArchSelect both[] = {{4, false, select_v4}, {3, false, select_v3}};
  OpDesc op = op_with(both, 2);
  EXPECT_EQ(pick_level_dispatcher(op, 4), 0);
  EXPECT_EQ(pick_level_dispatcher(op, 5), 0);  // a future level runs v4 code
  EXPECT_EQ(pick_level_dispatcher(op, 3), 1);
  EXPECT_EQ(pick_level_dispatcher(op, 2), -1);
  const ArchSelect v4_only[] = {{4, false, select_v4}};
  EXPECT_EQ(pick_level_dispatcher(op_with(v4_only, 1), 3), -1);
  EXPECT_EQ(pick_level_dispatcher(op_with(v4_only, 1), 4), 0);
}

TEST(PackRuntimeCpu, TheDetectedLevelAgreesWithTheCompiler) {
  int level = detected_x86_level();
  EXPECT_GE(level, 1);
  EXPECT_LE(level, 4);
  bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi2");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(level >= 3, v3);
  EXPECT_EQ(level >= 4, v4);
}

TEST(PackRuntimeCpu, TheTestOverrideOnlyLowersTheLevel) {
  setenv("DIETCODE_CPU_LEVEL", "3", 1);
  EXPECT_EQ(level_cap_from_environment(), 3);
  for (const char* ignored : {"5", "0", "v3", "33", ""}) {
    setenv("DIETCODE_CPU_LEVEL", ignored, 1);
    EXPECT_EQ(level_cap_from_environment(), 0) << ignored;
  }
  unsetenv("DIETCODE_CPU_LEVEL");
  EXPECT_EQ(level_cap_from_environment(), 0);
}

}  // namespace
}  // namespace dietcode_pack
