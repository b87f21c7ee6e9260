// The dense_f32 template's own code run on the CPU through a TEST DOUBLE of the device dialect
// (dense_f32_emulation.h): every pipeline mode, vector width, split-K with its reduction, static
// and dynamic dimensions and every epilogue, on shapes with tile remainders in M, N and K,
// against the double-precision reference. The GPU tests repeat this on real hardware.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nvrtc/dense_f32_emulation.h"
// The template is included once per configuration, each in its own namespace with its entry
// points renamed; the include order below matters.
// clang-format off
#include "../../templates/dietcode_args.h"

// Configuration 1: single buffer, scalar loads, odd per-thread tile (TN = 3), tiny block.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 4
#define THREADS_N 8
#define TM 2
#define TN 3
#define BK 4
#define VEC 1
#define STAGES 1
#define SPLITK 1
#define EPILOGUE 1
#define dietcode_dense_f32 cfg1_main
#define dietcode_dense_f32_reduce cfg1_reduce
namespace cfg1 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 2: double buffer through registers, float4 loads, tall warps, runtime K
// that may not be a multiple of VEC (scalar fallback).
#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 8
#define THREADS_N 4
#define TM 4
#define TN 2
#define BK 8
#define VEC 4
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 4
#define dietcode_dense_f32 cfg2_main
#define dietcode_dense_f32_reduce cfg2_reduce
namespace cfg2 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 3: cp.async multistage (3), split-K 3, TM = 6 (float2 fragments).
#define WARPS_M 1
#define WARPS_N 2
#define THREADS_M 2
#define THREADS_N 16
#define TM 6
#define TN 4
#define BK 16
#define VEC 1
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 5
#define dietcode_dense_f32 cfg3_main
#define dietcode_dense_f32_reduce cfg3_reduce
namespace cfg3 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 4: four stages, split-K 2, static N and K (odd K), one row of threads along M.
#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 1
#define THREADS_N 32
#define TM 3
#define TN 1
#define BK 8
#define VEC 1
#define STAGES 4
#define SPLITK 2
#define EPILOGUE 3
#define STATIC_N 45
#define STATIC_K 37
#define dietcode_dense_f32 cfg4_main
#define dietcode_dense_f32_reduce cfg4_reduce
namespace cfg4 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 5: float2 loads, double buffer, relu, 16-way split-K of a short K.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 16
#define THREADS_N 2
#define TM 1
#define TN 8
#define BK 4
#define VEC 2
#define STAGES 2
#define SPLITK 16
#define EPILOGUE 2
#define dietcode_dense_f32 cfg5_main
#define dietcode_dense_f32_reduce cfg5_reduce
namespace cfg5 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 6: the template's defaults (128 x 128 tile, 256 threads), no epilogue.
#define dietcode_dense_f32 cfg6_main
#define dietcode_dense_f32_reduce cfg6_reduce
namespace cfg6 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"
// Configuration 7: cuBLAS's 64 x 256 tile (a seed of the space): four warps side by side along
// N, 16 x 8 outputs per thread, cp.async in three stages, bias and GELU.
#define WARPS_M 1
#define WARPS_N 4
#define THREADS_M 4
#define THREADS_N 8
#define TM 16
#define TN 8
#define BK 8
#define VEC 1
#define STAGES 3
#define SPLITK 1
#define EPILOGUE 5
#define dietcode_dense_f32 cfg7_main
#define dietcode_dense_f32_reduce cfg7_reduce
namespace cfg7 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configuration 8: cuBLAS's 128 x 128 tile (a seed): 2 x 2 warps, 16 x 8 per thread, register
// staged float4 loads, split-K 2.
#define WARPS_M 2
#define WARPS_N 2
#define THREADS_M 4
#define THREADS_N 8
#define TM 16
#define TN 8
#define BK 8
#define VEC 4
#define STAGES 2
#define SPLITK 2
#define EPILOGUE 1
#define dietcode_dense_f32 cfg8_main
#define dietcode_dense_f32_reduce cfg8_reduce
namespace cfg8 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

// Configurations 9-11: PRELOAD, the next k-row's fragments loaded while this one computes,
// across the k-tile boundary: register staged (cfg8's tile, split-K 2), cp.async in three
// stages (cfg7's tile) and four stages of a small tile, so that K has fewer k-tiles than the
// pipeline has stages.
#define WARPS_M 2
#define WARPS_N 2
#define THREADS_M 4
#define THREADS_N 8
#define TM 16
#define TN 8
#define BK 8
#define VEC 4
#define STAGES 2
#define PRELOAD 1
#define SPLITK 2
#define EPILOGUE 1
#define dietcode_dense_f32 cfg9_main
#define dietcode_dense_f32_reduce cfg9_reduce
namespace cfg9 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

#define WARPS_M 1
#define WARPS_N 4
#define THREADS_M 4
#define THREADS_N 8
#define TM 16
#define TN 8
#define BK 8
#define VEC 1
#define STAGES 3
#define PRELOAD 1
#define SPLITK 1
#define EPILOGUE 5
#define dietcode_dense_f32 cfg10_main
#define dietcode_dense_f32_reduce cfg10_reduce
namespace cfg10 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"

#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 4
#define THREADS_N 8
#define TM 2
#define TN 2
#define BK 4
#define VEC 1
#define STAGES 4
#define PRELOAD 1
#define SPLITK 1
#define EPILOGUE 3
#define dietcode_dense_f32 cfg11_main
#define dietcode_dense_f32_reduce cfg11_reduce
namespace cfg11 {
#include "../../templates/dense_f32.cu"
}
#include "nvrtc/dense_f32_emulation_undef.h"
// clang-format on

#include "measure/cpu_reference.h"
#include "nvrtc/gemm_f32_emulation_run.h"

namespace dietcode {
namespace {

using testing::EmuKernel;

// Runs one kernel on one shape with the grid's y clamped to grid_y_cap (to exercise the loop
// over M tiles) and checks it against the reference; emu_run checks that nothing outside Y was
// written.
void run_case(const EmuKernel& k, Epilogue epilogue, int64_t M, int64_t N, int64_t K,
              unsigned grid_y_cap) {
  SCOPED_TRACE(k.name + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
               " K=" + std::to_string(K));
  std::mt19937 rng(unsigned(M * 131 + N * 7 + K));
  const auto x = testing::random_floats(size_t(M * K), rng);
  const auto w = testing::random_floats(size_t(N * K), rng);
  const auto bias = testing::random_floats(size_t(N), rng);

  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.data();
  args.b = w.data();
  args.bias = bias.data();
  args.batch = 1, args.m = M, args.n = N, args.k = K;
  args.stride_a = M * K, args.stride_b = N * K, args.stride_c = M * N;
  const auto y = testing::emu_run(k, args, GemmShape{1, M, N, K}, grid_y_cap);

  const bool with_bias = epilogue == Epilogue::kBias || epilogue == Epilogue::kBiasRelu ||
                         epilogue == Epilogue::kBiasGelu;
  const auto acc = dense_accumulate(x.data(), w.data(), M, N, K, 1);
  const auto want = dense_apply_epilogue(acc, bias.data(), epilogue, M);
  const auto cmp = compare_dense(y.data(), want, acc, with_bias ? bias.data() : nullptr, M);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

TEST(DenseF32Emulated, SingleBufferScalarLoadsOddThreadTile) {
  const auto k = EMU_KERNEL(cfg1);
  const Epilogue e = Epilogue::kBias;
  EXPECT_EQ(k.bm, 8);
  EXPECT_EQ(k.bn, 24);
  for (int64_t M : {1, 7, 9, 17})
    for (int64_t N : {1, 23, 25})
      for (int64_t K : {1, 4, 9}) run_case(k, e, M, N, K, 65535);
  run_case(k, e, 33, 30, 13, 2);  // M tiles looped over by a clamped grid
}

TEST(DenseF32Emulated, DoubleBufferFloat4LoadsWithRuntimeVectorFallback) {
  const auto k = EMU_KERNEL(cfg2);
  const Epilogue e = Epilogue::kGelu;
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 8);
  for (int64_t K : {8, 12, 13, 31, 40})  // 13 and 31: K % 4 != 0, scalar path
    for (int64_t M : {1, 63, 65}) run_case(k, e, M, 11, K, 65535);
  run_case(k, e, 130, 9, 20, 1);
}

TEST(DenseF32Emulated, CpAsyncThreeStagesSplitK3) {
  const auto k = EMU_KERNEL(cfg3);
  const Epilogue e = Epilogue::kBiasGelu;
  EXPECT_EQ(k.bm, 12);
  EXPECT_EQ(k.bn, 128);
  for (int64_t K : {1, 16, 47, 48, 49, 100})  // short K leaves splits empty
    for (int64_t M : {1, 12, 13}) run_case(k, e, M, 130, K, 65535);
}

TEST(DenseF32Emulated, CpAsyncFourStagesStaticDimsSplitK2) {
  const auto k = EMU_KERNEL(cfg4);
  const Epilogue e = Epilogue::kBiasRelu;
  EXPECT_EQ(k.bm, 6);
  EXPECT_EQ(k.bn, 32);
  for (int64_t M : {1, 5, 6, 7, 20}) run_case(k, e, M, 45, 37, 65535);
  run_case(k, e, 20, 45, 37, 2);
}

TEST(DenseF32Emulated, Float2LoadsSplitK16) {
  const auto k = EMU_KERNEL(cfg5);
  const Epilogue e = Epilogue::kRelu;
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 16);
  for (int64_t K : {2, 3, 64, 66, 70})
    for (int64_t M : {1, 17}) run_case(k, e, M, 17, K, 65535);
}

TEST(DenseF32Emulated, DefaultParameters) {
  const auto k = EMU_KERNEL(cfg6);
  const Epilogue e = Epilogue::kNone;
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 128);
  EXPECT_EQ(k.threads, 256);
  run_case(k, e, 130, 129, 21, 65535);
}

TEST(DenseF32Emulated, CublasWideTileSixteenByEightPerThread) {
  const auto k = EMU_KERNEL(cfg7);
  const Epilogue e = Epilogue::kBiasGelu;
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 256);
  EXPECT_EQ(k.threads, 128);
  for (int64_t M : {1, 63, 65})
    for (int64_t N : {255, 257}) run_case(k, e, M, N, 21, 65535);
  run_case(k, e, 130, 100, 8, 1);
}

TEST(DenseF32Emulated, CublasSquareTileSplitK2) {
  const auto k = EMU_KERNEL(cfg8);
  const Epilogue e = Epilogue::kBias;
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 128);
  for (int64_t M : {1, 127, 129})
    for (int64_t K : {16, 37}) run_case(k, e, M, 129, K, 65535);
}

// PRELOAD: one k-tile (the first tile's row 0 is the only preload), two (one boundary), and
// many with a remainder, in every pipeline.
TEST(DenseF32Emulated, PreloadRegisterStagedSplitK2) {
  const auto k = EMU_KERNEL(cfg9);
  const Epilogue e = Epilogue::kBias;
  for (int64_t M : {1, 129})
    for (int64_t K : {8, 16, 37, 64}) run_case(k, e, M, 129, K, 65535);
  run_case(k, e, 260, 100, 45, 1);
}

TEST(DenseF32Emulated, PreloadCpAsyncThreeStages) {
  const auto k = EMU_KERNEL(cfg10);
  const Epilogue e = Epilogue::kBiasGelu;
  for (int64_t M : {1, 65})
    for (int64_t K : {8, 16, 21, 64}) run_case(k, e, M, 257, K, 65535);
  run_case(k, e, 130, 100, 40, 1);
}

TEST(DenseF32Emulated, PreloadCpAsyncFourStagesFewerTilesThanStages) {
  const auto k = EMU_KERNEL(cfg11);
  const Epilogue e = Epilogue::kBiasRelu;
  for (int64_t K : {1, 4, 5, 8, 12, 13, 33})
    for (int64_t M : {1, 9}) run_case(k, e, M, 67, K, 65535);
  run_case(k, e, 40, 20, 19, 2);
}

}  // namespace
}  // namespace dietcode
