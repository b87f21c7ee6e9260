// dense_tc with B stored [K,N] (B_K_CONTIGUOUS 0: batch_matmul's probs . V) run on the CPU
// through a TEST DOUBLE of the device dialect and of ldmatrix (.trans included) / mma.sync
// (tc_emulation.h): every B swizzle width the template has (rows of 1, 6, 4, 8 and 16 chunks;
// 6 chunks on 128 threads take the copy loop for chunk counts that do not divide the block),
// odd numbers of n8 tiles (ldmatrix .x2 .trans), split-K, guarded 2-byte B loads for an N that
// is not a multiple of 8 (static or at run time) and A loads for such a K, on batches with
// tails in M, N and K and gaps between batch elements, against the double-precision reference
// rounded to the element type. It checks the kernel's logic as the PTX ISA describes the
// instructions; tests/gpu/batch_matmul_tc_gpu_test.cc repeats it on hardware.
#include <gtest/gtest.h>

#include "nvrtc/tc_emulation.h"
// The template is included once per configuration, each in its own namespace with its entry
// points renamed; the include order below matters.
// clang-format off
#include "../../templates/dietcode_args.h"

// Configuration 1: one warp of 16 x 8 (one chunk per B row: no swizzle; a lone .x2 .trans), f16,
// bias, runtime N and K.
#define B_K_CONTIGUOUS 0
#define DTYPE 1
#define WARPS_M 1
#define WARPS_N 1
#define WM 16
#define WN 8
#define BK 32
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 1
#define dietcode_dense_tc kn1_main
#define dietcode_dense_tc_reduce kn1_reduce
namespace kn1 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 2: bf16, 2 x 2 warps of 32 x 24 (BN 48: 6 chunks, swizzle width 2; three n8
// tiles per warp), BK 64, 3 stages, split-K 3, bias + gelu, runtime N and K.
#define B_K_CONTIGUOUS 0
#define DTYPE 2
#define WARPS_M 2
#define WARPS_N 2
#define WM 32
#define WN 24
#define BK 64
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 5
#define dietcode_dense_tc kn2_main
#define dietcode_dense_tc_reduce kn2_reduce
namespace kn2 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 3: f16, 1 x 2 warps of 48 x 16 (BN 32: 4 chunks, swizzle width 4), 4 stages,
// split-K 2, bias + relu, static N = 45 (B's 2-byte path only) and K = 72.
#define B_K_CONTIGUOUS 0
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
#define dietcode_dense_tc kn3_main
#define dietcode_dense_tc_reduce kn3_reduce
namespace kn3 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 4: the template's defaults (BN 64: 8 chunks, full swizzle) in bf16, static
// N = 64, runtime K, no epilogue.
#define B_K_CONTIGUOUS 0
#define DTYPE 2
#define EPILOGUE 0
#define STATIC_N 64
#define dietcode_dense_tc kn4_main
#define dietcode_dense_tc_reduce kn4_reduce
namespace kn4 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 5: f16, 1 x 2 warps of 32 x 64 (BN 128: 16 chunks), BK 64, 2 stages, gelu.
#define B_K_CONTIGUOUS 0
#define DTYPE 1
#define WARPS_M 1
#define WARPS_N 2
#define WM 32
#define WN 64
#define BK 64
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 4
#define dietcode_dense_tc kn5_main
#define dietcode_dense_tc_reduce kn5_reduce
namespace kn5 {
#include "../../templates/dense_tc.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// clang-format on

#include "nvrtc/tc_emulated_case.h"

namespace dietcode {
namespace {

using testing::EmuShape;
using testing::run_shape;

EmuShape kn(int64_t batch, int64_t M, int64_t N, int64_t K, int64_t gap = 8) {
  return EmuShape{batch, M, N, K, gap, /*b_k_contiguous=*/false};
}

TEST(DenseTcKnEmulated, OneWarpNoSwizzleF16Bias) {
  const auto k = EMU_KERNEL(kn1, DType::kFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bn, 8);
  for (int64_t M : {1, 17})
    for (int64_t N : {1, 8, 9})
      for (int64_t K : {8, 40, 13}) run_shape(k, kn(2, M, N, K));
  run_shape(k, kn(3, 40, 16, 96), 2);  // M tiles looped over by a clamped grid
}

TEST(DenseTcKnEmulated, SwizzleWidth2ThreeN8TilesSplitK3) {
  const auto k = EMU_KERNEL(kn2, DType::kBFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bn, 48);
  for (int64_t K : {1, 64, 200, 13}) run_shape(k, kn(2, 65, 56, K));
  run_shape(k, kn(3, 63, 47, 136));  // N % 8 != 0 at run time: B's 2-byte loads
  run_shape(k, kn(2, 1, 96, 128, 0));
}

TEST(DenseTcKnEmulated, SwizzleWidth4StaticOddNSplitK2) {
  const auto k = EMU_KERNEL(kn3, DType::kFloat16, Epilogue::kBiasRelu);
  EXPECT_EQ(k.bn, 32);
  for (int64_t M : {1, 49}) run_shape(k, kn(2, M, 45, 72));
  run_shape(k, kn(3, 100, 45, 72), 1);
}

TEST(DenseTcKnEmulated, DefaultsFullSwizzleStaticN) {
  const auto k = EMU_KERNEL(kn4, DType::kBFloat16, Epilogue::kNone);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 64);
  for (int64_t K : {1, 64, 100, 136}) run_shape(k, kn(2, 129, 64, K));
}

TEST(DenseTcKnEmulated, SixteenChunkRowsGelu) {
  const auto k = EMU_KERNEL(kn5, DType::kFloat16, Epilogue::kGelu);
  EXPECT_EQ(k.bn, 128);
  run_shape(k, kn(2, 33, 130, 136));
  run_shape(k, kn(2, 32, 128, 64, 0));
}

}  // namespace
}  // namespace dietcode
