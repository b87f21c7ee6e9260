// The dense_tc template's own code run on the CPU through a TEST DOUBLE of the device dialect
// and of ldmatrix / mma.sync (tc_emulation.h): both element types, every pipeline depth, both
// BK, odd numbers of n8 tiles (the ldmatrix .x2 path), split-K with its reduction, the scalar
// path for a K that is not a multiple of 8, static and dynamic dimensions, odd N (unpacked
// stores) and every epilogue, on shapes with tile remainders in M, N and K, and batches of
// GEMMs with strides (batch_matmul), against the double-precision reference rounded to the
// element type. The GPU tests repeat this on
// hardware.
#include <gtest/gtest.h>

#include "nvrtc/tc_emulation.h"
// The template is included once per configuration, each in its own namespace with its entry
// points renamed; the include order below matters.
// clang-format off
#include "../../templates/dietcode_args.h"

// Configuration 1: the smallest tile (one warp, 16 x 8: a lone ldmatrix .x2), f16, bias.
#define DTYPE 1
#define WARPS_M 1
#define WARPS_N 1
#define WM 16
#define WN 8
#define BK 32
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 1
#define dietcode_dense_tc cfg1_main
#define dietcode_dense_tc_reduce cfg1_reduce
namespace cfg1 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 2: bf16, 2 x 2 warps of 32 x 24 (three n8 tiles), BK 64, 3 stages, split-K 3,
// bias + gelu, runtime N and K.
#define DTYPE 2
#define WARPS_M 2
#define WARPS_N 2
#define WM 32
#define WN 24
#define BK 64
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 5
#define dietcode_dense_tc cfg2_main
#define dietcode_dense_tc_reduce cfg2_reduce
namespace cfg2 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 3: f16, 4 stages, split-K 2, bias + relu, static odd N (unpacked stores).
#define DTYPE 1
#define WARPS_M 1
#define WARPS_N 2
#define WM 48
#define WN 16
#define BK 32
#define STAGES 4
#define SPLITK 2
#define EPILOGUE 3
#define STATIC_N 45
#define STATIC_K 72
#define dietcode_dense_tc cfg3_main
#define dietcode_dense_tc_reduce cfg3_reduce
namespace cfg3 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 4: the template's defaults in bf16, relu, a static K that is not a multiple
// of 8 (the scalar load path is the only one compiled).
#define DTYPE 2
#define EPILOGUE 2
#define STATIC_N 70
#define STATIC_K 100
#define dietcode_dense_tc cfg4_main
#define dietcode_dense_tc_reduce cfg4_reduce
namespace cfg4 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 5: f16, 4 x 1 warps of 16 x 64, BK 64, 2 stages, 16-way split-K, gelu.
#define DTYPE 1
#define WARPS_M 4
#define WARPS_N 1
#define WM 16
#define WN 64
#define BK 64
#define STAGES 2
#define SPLITK 16
#define EPILOGUE 4
#define dietcode_dense_tc cfg5_main
#define dietcode_dense_tc_reduce cfg5_reduce
namespace cfg5 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 6: the tallest warp tile the space has, 128 x 32 in one warp, bf16, no epilogue.
#define DTYPE 2
#define WARPS_M 1
#define WARPS_N 1
#define WM 128
#define WN 32
#define BK 64
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 0
#define dietcode_dense_tc cfg6_main
#define dietcode_dense_tc_reduce cfg6_reduce
namespace cfg6 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// clang-format on

#include "nvrtc/tc_emulated_case.h"

namespace dietcode {
namespace {

using testing::EmuShape;
using testing::run_case;
using testing::run_shape;

TEST(DenseTcEmulated, SmallestTileF16Bias) {
  const auto k = EMU_KERNEL(cfg1, DType::kFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 8);
  EXPECT_EQ(k.smem_bytes, 2 * (16 + 8) * 32 * 2);
  for (int64_t M : {1, 15, 17})
    for (int64_t N : {1, 8, 9})
      for (int64_t K : {8, 40, 13}) run_case(k, M, N, K);
  run_case(k, 40, 17, 96, 2);  // M tiles looped over by a clamped grid
}

TEST(DenseTcEmulated, Bf16ThreeN8TilesBk64SplitK3RuntimeDims) {
  const auto k = EMU_KERNEL(cfg2, DType::kBFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 48);
  for (int64_t K : {1, 64, 200, 13})  // 1 and 13: scalar loads; short K leaves splits empty
    for (int64_t M : {1, 65}) run_case(k, M, 50, K);
  run_case(k, 63, 47, 136);
}

TEST(DenseTcEmulated, F16FourStagesSplitK2StaticOddN) {
  const auto k = EMU_KERNEL(cfg3, DType::kFloat16, Epilogue::kBiasRelu);
  EXPECT_EQ(k.bm, 48);
  EXPECT_EQ(k.bn, 32);
  for (int64_t M : {1, 47, 49, 100}) run_case(k, M, 45, 72);
  run_case(k, 100, 45, 72, 1);
}

TEST(DenseTcEmulated, DefaultsBf16StaticKNotAMultipleOf8) {
  const auto k = EMU_KERNEL(cfg4, DType::kBFloat16, Epilogue::kRelu);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 64);
  EXPECT_EQ(k.threads, 128);
  EXPECT_EQ(k.smem_bytes, 3 * (128 + 64) * 32 * 2);
  for (int64_t M : {1, 129}) run_case(k, M, 70, 100);
}

TEST(DenseTcEmulated, F16SplitK16Gelu) {
  const auto k = EMU_KERNEL(cfg5, DType::kFloat16, Epilogue::kGelu);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 64);
  for (int64_t K : {8, 64, 1000, 1032}) run_case(k, 17, 65, K);
}

TEST(DenseTcEmulated, LargestWarpTileBf16) {
  const auto k = EMU_KERNEL(cfg6, DType::kBFloat16, Epilogue::kNone);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 32);
  run_case(k, 130, 33, 136);
}

// batch_matmul with A[b] = [M,K] and B[b] = [N,K]: each batch element from its own strides
// (blockIdx.z / SPLITK), with tails in M, N and K and split-K partial sums per batch element.
TEST(DenseTcEmulatedBatch, SmallestTileBatchOfThree) {
  const auto k = EMU_KERNEL(cfg1, DType::kFloat16, Epilogue::kBias);
  run_shape(k, EmuShape{3, 17, 9, 40, 8});
  run_shape(k, EmuShape{2, 15, 8, 13, 8});      // K % 8 != 0: scalar loads
  run_shape(k, EmuShape{3, 40, 17, 96, 8}, 2);  // M tiles looped over by a clamped grid
}

TEST(DenseTcEmulatedBatch, SplitK3RuntimeDimsBatchOfThree) {
  const auto k = EMU_KERNEL(cfg2, DType::kBFloat16, Epilogue::kBiasGelu);
  run_shape(k, EmuShape{3, 65, 50, 200, 8});
  run_shape(k, EmuShape{2, 1, 47, 136, 0});  // packed, as the measurer lays them out
  run_shape(k, EmuShape{2, 33, 50, 13, 8});  // short K leaves splits empty
}

TEST(DenseTcEmulatedBatch, StaticOddNSplitK2BatchOfTwo) {
  const auto k = EMU_KERNEL(cfg3, DType::kFloat16, Epilogue::kBiasRelu);
  run_shape(k, EmuShape{2, 49, 45, 72, 8});
  run_shape(k, EmuShape{4, 7, 45, 72, 16}, 1);
}

}  // namespace
}  // namespace dietcode
