// The batch_matmul_f32 template's own code run on the CPU through a TEST DOUBLE of the device
// dialect (dense_f32_emulation.h): every transpose combination, each pipeline mode, vector
// widths that do and do not divide the tile or the pitch, split-K with its reduction, static
// and dynamic dimensions, on batches of shapes with T = 1, primes and tails in every tile
// dimension, against the double-precision CPU reference. The GPU tests repeat this on hardware.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nvrtc/dense_f32_emulation.h"
// Each configuration includes the template in its own namespace with its entry points renamed.
// clang-format off
#include "../../templates/dietcode_args.h"

// 1: A[M,K], B[K,N] (no transpose): double buffer, float4 loads along K (A) and N (B).
#define WARPS_M 1
#define WARPS_N 2
#define THREADS_M 4
#define THREADS_N 8
#define TM 2
#define TN 4
#define BK 8
#define VEC 4
#define STAGES 2
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define dietcode_batch_matmul_f32 nn_main
#define dietcode_batch_matmul_f32_reduce nn_reduce
namespace nn {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 2: A stored [K,M] (transpose_a), B[K,N]: single buffer, float2 loads along M and N, relu.
#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 8
#define THREADS_N 4
#define TM 2
#define TN 2
#define BK 4
#define VEC 2
#define STAGES 1
#define EPILOGUE 2
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 0
#define dietcode_batch_matmul_f32 tn_main
#define dietcode_batch_matmul_f32_reduce tn_reduce
namespace tn {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 3: both transposed (A [K,M], B [N,K]): cp.async 3 stages, split-K 3, gelu.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 4
#define THREADS_N 8
#define TM 3
#define TN 2
#define BK 8
#define VEC 1
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 4
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 1
#define dietcode_batch_matmul_f32 tt_main
#define dietcode_batch_matmul_f32_reduce tt_reduce
namespace tt {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 4: B stored [N,K] (transpose_b, attention's Q.K^T) with a static K = 64: float4 along K for
// both, double buffer, split-K 2.
#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 2
#define THREADS_N 16
#define TM 4
#define TN 1
#define BK 16
#define VEC 4
#define STAGES 2
#define SPLITK 2
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 1
#define STATIC_K 64
#define dietcode_batch_matmul_f32 nt_main
#define dietcode_batch_matmul_f32_reduce nt_reduce
namespace nt {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 5: no transpose with a static N = 64 and a dynamic K (attention's P.V): cp.async 4 stages.
#define WARPS_M 1
#define WARPS_N 2
#define THREADS_M 2
#define THREADS_N 16
#define TM 3
#define TN 2
#define BK 4
#define VEC 1
#define STAGES 4
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define STATIC_N 64
#define dietcode_batch_matmul_f32 av_main
#define dietcode_batch_matmul_f32_reduce av_reduce
namespace av {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 6: transpose_a with VEC = 4 and BM = 6, which float4 chunks cannot tile (float2 chunks along
// M), B[K,N] with BN = 48; static M = 32, dynamic N and K.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 2
#define THREADS_N 16
#define TM 3
#define TN 3
#define BK 8
#define VEC 4
#define STAGES 2
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 0
#define STATIC_M 32
#define dietcode_batch_matmul_f32 odd_main
#define dietcode_batch_matmul_f32_reduce odd_reduce
namespace odd {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 7: B[K,N] with BN = 3 (scalar chunks along N although VEC = 4), single buffer, split-K 2.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 32
#define THREADS_N 1
#define TM 2
#define TN 3
#define BK 4
#define VEC 4
#define STAGES 1
#define SPLITK 2
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define dietcode_batch_matmul_f32 bn3_main
#define dietcode_batch_matmul_f32_reduce bn3_reduce
namespace bn3 {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 8-9: PRELOAD with the loaders dense_f32 does not use (rows contiguous along M and N): A stored
// [K,M] and B[K,N], register staged with float4 loads; and A[M,K] with B[K,N] by cp.async in
// three stages, split-K 2.
#define WARPS_M 1
#define WARPS_N 2
#define THREADS_M 4
#define THREADS_N 8
#define TM 4
#define TN 4
#define BK 8
#define VEC 4
#define STAGES 2
#define PRELOAD 1
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 0
#define dietcode_batch_matmul_f32 pre2_main
#define dietcode_batch_matmul_f32_reduce pre2_reduce
namespace pre2 {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 8
#define THREADS_N 4
#define TM 2
#define TN 4
#define BK 4
#define VEC 1
#define STAGES 3
#define PRELOAD 1
#define SPLITK 2
#define EPILOGUE 2
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define dietcode_batch_matmul_f32 pre3_main
#define dietcode_batch_matmul_f32_reduce pre3_reduce
namespace pre3 {
#include "../../templates/batch_matmul_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"
// clang-format on

#include "measure/cpu_reference.h"
#include "measure/gpu_operands.h"
#include "nvrtc/gemm_f32_emulation_run.h"

namespace dietcode {
namespace {

using testing::EmuKernel;

// One batch of problems through kernel k, checked against the CPU reference.
void run_case(const EmuKernel& k, bool transpose_a, bool transpose_b, Epilogue epilogue,
              const GemmShape& s, unsigned grid_y_cap = 65535) {
  SCOPED_TRACE(k.name + " batch=" + std::to_string(s.batch) + " M=" + std::to_string(s.M) +
               " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
  std::mt19937 rng(unsigned(s.batch * 7919 + s.M * 131 + s.N * 7 + s.K));
  const auto a = testing::random_floats(size_t(s.batch * s.M * s.K), rng);
  const auto b = testing::random_floats(size_t(s.batch * s.K * s.N), rng);
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = a.data();
  args.b = b.data();
  set_shape_args(OpKind::kBatchMatmul, s, nullptr, &args);
  const auto got = testing::emu_run(k, args, s, grid_y_cap);

  const auto acc = batch_matmul_accumulate(a.data(), b.data(), s.batch, s.M, s.N, s.K, transpose_a,
                                           transpose_b, 1);
  const auto want = dense_apply_epilogue(acc, nullptr, epilogue, s.batch * s.M);
  const auto cmp = compare_dense(got.data(), want, acc, nullptr, s.batch * s.M);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

TEST(BatchMatmulF32Emulated, NoTransposeDoubleBufferFloat4) {
  const auto k = EMU_KERNEL(nn);
  EXPECT_EQ(k.bm, 8);
  EXPECT_EQ(k.bn, 64);
  // Pitches K (A) and N (B) that float4 does and does not divide; tails in M, N and K.
  for (int64_t m : {1, 7, 8, 9, 17})
    for (int64_t n : {1, 13, 64, 67})
      for (int64_t kk : {1, 5, 8, 12, 23}) run_case(k, false, false, Epilogue::kNone, {2, m, n, kk});
  run_case(k, false, false, Epilogue::kNone, {3, 41, 70, 16}, 2);  // clamped grid
}

TEST(BatchMatmulF32Emulated, TransposeASingleBufferFloat2Relu) {
  const auto k = EMU_KERNEL(tn);
  EXPECT_EQ(k.bm, 32);
  EXPECT_EQ(k.bn, 8);
  for (int64_t m : {1, 2, 31, 33})
    for (int64_t n : {1, 7, 9})
      for (int64_t kk : {1, 3, 4, 11}) run_case(k, true, false, Epilogue::kRelu, {3, m, n, kk});
}

TEST(BatchMatmulF32Emulated, BothTransposedCpAsyncSplitK3Gelu) {
  const auto k = EMU_KERNEL(tt);
  EXPECT_EQ(k.bm, 12);
  EXPECT_EQ(k.bn, 16);
  EXPECT_EQ(k.split_k, 3);
  for (int64_t m : {1, 12, 13})
    for (int64_t n : {1, 16, 19})
      for (int64_t kk : {1, 8, 23, 24, 25, 50})  // short K leaves splits empty
        run_case(k, true, true, Epilogue::kGelu, {2, m, n, kk});
}

TEST(BatchMatmulF32Emulated, AttentionScoresStaticKSplitK2) {
  const auto k = EMU_KERNEL(nt);
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 16);
  for (int64_t t : {1, 2, 3, 5, 16, 17, 31, 37})  // M = N = T
    run_case(k, false, true, Epilogue::kNone, {3, t, t, 64});
}

TEST(BatchMatmulF32Emulated, AttentionValuesStaticNDynamicKCpAsync4) {
  const auto k = EMU_KERNEL(av);
  EXPECT_EQ(k.bm, 6);
  EXPECT_EQ(k.bn, 64);
  for (int64_t t : {1, 2, 5, 6, 7, 13, 29})  // M = K = T
    run_case(k, false, false, Epilogue::kNone, {2, t, 64, t});
}

TEST(BatchMatmulF32Emulated, TransposeATileVecDoesNotDivide) {
  const auto k = EMU_KERNEL(odd);
  EXPECT_EQ(k.bm, 6);
  EXPECT_EQ(k.bn, 48);
  for (int64_t n : {1, 3, 47, 48, 50})
    for (int64_t kk : {1, 8, 9}) run_case(k, true, false, Epilogue::kNone, {2, 32, n, kk});
}

TEST(BatchMatmulF32Emulated, ThreeColumnTileSplitK2) {
  const auto k = EMU_KERNEL(bn3);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 3);
  for (int64_t n : {1, 2, 3, 4, 8})
    for (int64_t kk : {1, 4, 9, 16}) run_case(k, false, false, Epilogue::kNone, {2, 65, n, kk});
}

TEST(BatchMatmulF32Emulated, PreloadTransposeARegisterStaged) {
  const auto k = EMU_KERNEL(pre2);
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 64);
  for (int64_t m : {1, 17})
    for (int64_t n : {5, 64, 67})
      for (int64_t kk : {1, 8, 9, 16, 40}) run_case(k, true, false, Epilogue::kNone, {2, m, n, kk});
}

TEST(BatchMatmulF32Emulated, PreloadCpAsyncThreeStagesSplitK2) {
  const auto k = EMU_KERNEL(pre3);
  EXPECT_EQ(k.bm, 32);
  EXPECT_EQ(k.bn, 16);
  for (int64_t m : {1, 33})
    for (int64_t n : {3, 17})
      for (int64_t kk : {4, 8, 13, 36}) run_case(k, false, false, Epilogue::kRelu, {2, m, n, kk});
}

}  // namespace
}  // namespace dietcode
