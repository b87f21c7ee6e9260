// The host-only logic of the loader runtime inside every pack: the launch geometry, which
// repeats codegen's LaunchPlan (the pack cannot link dietcode), and the choice of binary.
#include "pack/runtime/pack_runtime.h"

#include <gtest/gtest.h>

#include "codegen/generated_kernel.h"
#include "common/error.h"

namespace dietcode {
namespace {

TEST(PackRuntimeGrid, MatchesTheLaunchPlanOnEveryShape) {
  for (int tile_m : {1, 8, 24, 128})
    for (int tile_n : {4, 64, 96})
      for (int split_k : {1, 3, 16})
        for (int m_tiles : {1, 2, 3}) {
          LaunchPlan plan;
          plan.tile_m = tile_m, plan.tile_n = tile_n, plan.split_k = split_k;
          plan.m_tiles_per_block = m_tiles;
          plan.reduce_threads = 256;
          if (split_k > 1) plan.reduce_entry = "r";
          dietcode_pack::KernelDesc k{};
          k.tile_m = tile_m, k.tile_n = tile_n, k.split_k = split_k, k.reduce_threads = 256;
          k.m_tiles_per_block = m_tiles;
          k.reduce_entry = split_k > 1 ? "r" : "";
          for (int64_t batch : {int64_t(1), int64_t(2), int64_t(5000)})
            for (int64_t m : {int64_t(1), int64_t(7), int64_t(128), int64_t(129),
                              int64_t(65535) * 128 + 1, int64_t(1) << 26})
              for (int64_t n : {int64_t(1), int64_t(63), int64_t(768), int64_t(3072)}) {
                GemmShape shape{batch, m, n, 768};
                DietcodeArgs a{};
                a.batch = batch, a.m = m, a.n = n, a.k = 768;
                int64_t grid[3];
                bool fits = dietcode_pack::main_grid(k, a, grid);
                unsigned dims[3];
                try {
                  plan.grid(shape, dims);
                  ASSERT_TRUE(fits);
                  EXPECT_EQ(grid[0], dims[0]);
                  EXPECT_EQ(grid[1], dims[1]);
                  EXPECT_EQ(grid[2], dims[2]);
                } catch (const UserError&) {
                  EXPECT_FALSE(fits) << batch << " " << m << " " << n;
                }
                EXPECT_EQ(dietcode_pack::workspace_bytes(k, a), plan.workspace_bytes(shape));
                if (split_k > 1) {
                  int64_t reduce[3];
                  bool reduce_fits = dietcode_pack::reduce_grid(k, a, reduce);
                  try {
                    plan.reduce_grid(shape, dims);
                    ASSERT_TRUE(reduce_fits);
                    EXPECT_EQ(reduce[0], dims[0]);
                    EXPECT_EQ(reduce[1], dims[1]);
                    EXPECT_EQ(reduce[2], dims[2]);
                  } catch (const UserError&) {
                    EXPECT_FALSE(reduce_fits);
                  }
                }
              }
        }
}

TEST(PackRuntimeArch, PicksTheCubinForTheGpuElsePtxElseNothing) {
  const unsigned char bytes[1] = {0};
  const dietcode_pack::CubinImage cubins[] = {
      {80, false, bytes, 1}, {90, false, bytes, 1}, {90, true, bytes, 1}};
  dietcode_pack::KernelDesc k{};
  k.cubins = cubins;
  k.n_cubins = 3;
  k.ptx = "ptx";
  k.ptx_cc = 90;
  EXPECT_EQ(dietcode_pack::pick_image(k, 80), 0);
  EXPECT_EQ(dietcode_pack::pick_image(k, 86), 0);  // sm_80 SASS runs on 8.6
  EXPECT_EQ(dietcode_pack::pick_image(k, 89), 0);
  EXPECT_EQ(dietcode_pack::pick_image(k, 90), 2);  // sm_90a preferred on exactly 9.0
  EXPECT_EQ(dietcode_pack::pick_image(k, 100), dietcode_pack::kUsePtx);  // newer: JIT
  EXPECT_EQ(dietcode_pack::pick_image(k, 120), dietcode_pack::kUsePtx);
  EXPECT_EQ(dietcode_pack::pick_image(k, 75), dietcode_pack::kNoImage);  // older: mismatch
  k.n_cubins = 1;  // sm_80 only, PTX compute_90
  EXPECT_EQ(dietcode_pack::pick_image(k, 90), dietcode_pack::kUsePtx);
  EXPECT_EQ(dietcode_pack::pick_image(k, 87), 0);
  k.ptx = nullptr;
  EXPECT_EQ(dietcode_pack::pick_image(k, 90), dietcode_pack::kNoImage);
  k.cubins = cubins + 2;  // sm_90a alone does not run on 9.x other than 9.0
  EXPECT_EQ(dietcode_pack::pick_image(k, 91), dietcode_pack::kNoImage);
}

}  // namespace
}  // namespace dietcode
