// The dense_wgmma template's own code run on the CPU through a TEST DOUBLE of the device
// dialect, of mbarriers and of wgmma with its shared-memory descriptors (tc_emulation.h): the
// producer / consumer pipeline protocol over many rounds of the stage ring and across the M
// tiles of a block, one to four consumer warpgroups, power-of-two and other wgmma n, split-K,
// the scalar load path for a K that is not a multiple of 8, static and dynamic dimensions, odd
// N, every epilogue and batches of GEMMs with strides (batch_matmul, both producers), against the
// double-precision reference rounded to the element type; and the TMA producer (PRODUCER 1)
// through tensor maps made by the host code the pack runtime and the measurer use
// (pack_tensor_maps.h), with the TMA's zero fill as the padding. It checks the kernel's logic
// as the PTX ISA describes the instructions; only a GPU can confirm the hardware agrees
// (tests/gpu/dense_tc_gpu_test.cc).
#include <gtest/gtest.h>

#include "nvrtc/tc_emulation.h"
// The template is included once per configuration, each in its own namespace with its entry
// points renamed; the include order below matters.
// clang-format off
#include "../../templates/dietcode_args.h"

// Configuration 1: one consumer, n64, 2 stages, bf16, bias, runtime N and K.
#define DTYPE 2
#define WG_M 1
#define BN 64
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 1
#define dietcode_dense_wgmma w1_main
#define dietcode_dense_wgmma_reduce w1_reduce
namespace w1 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 2: two consumers, n128, 3 stages, f16, split-K 3, bias + gelu, runtime dims.
#define DTYPE 1
#define WG_M 2
#define BN 128
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 5
#define dietcode_dense_wgmma w2_main
#define dietcode_dense_wgmma_reduce w2_reduce
namespace w2 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 3: two consumers, n256, 4 stages, bf16, bias + relu, static odd N and K = 200.
#define DTYPE 2
#define WG_M 2
#define BN 256
#define STAGES 4
#define SPLITK 1
#define EPILOGUE 3
#define STATIC_N 301
#define STATIC_K 200
#define dietcode_dense_wgmma w3_main
#define dietcode_dense_wgmma_reduce w3_reduce
namespace w3 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 4: one consumer, n128, 6 stages, f16, split-K 2, gelu, static K = 100 (the
// scalar load path only).
#define DTYPE 1
#define WG_M 1
#define BN 128
#define STAGES 6
#define SPLITK 2
#define EPILOGUE 4
#define STATIC_K 100
#define dietcode_dense_wgmma w4_main
#define dietcode_dense_wgmma_reduce w4_reduce
namespace w4 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 5: the TMA producer, one consumer, n64, 2 stages, bf16, bias, runtime N and K.
#define DTYPE 2
#define WG_M 1
#define BN 64
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 1
#define PRODUCER 1
#define dietcode_dense_wgmma t1_main
#define dietcode_dense_wgmma_reduce t1_reduce
namespace t1 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 6: the TMA producer, two consumers, n256, 4 stages, f16, split-K 3, bias + gelu,
// static odd N = 301 and K = 456 (the last K box is mostly past K).
#define DTYPE 1
#define WG_M 2
#define BN 256
#define STAGES 4
#define SPLITK 3
#define EPILOGUE 5
#define STATIC_N 301
#define STATIC_K 456
#define PRODUCER 1
#define dietcode_dense_wgmma t2_main
#define dietcode_dense_wgmma_reduce t2_reduce
namespace t2 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 7: the TMA producer, two consumers, n128, 3 stages, bf16, split-K 2, relu,
// runtime dims.
#define DTYPE 2
#define WG_M 2
#define BN 128
#define STAGES 3
#define SPLITK 2
#define EPILOGUE 2
#define PRODUCER 1
#define dietcode_dense_wgmma t3_main
#define dietcode_dense_wgmma_reduce t3_reduce
namespace t3 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// Configuration 8: three consumers, n88 (not a power of two, nor a multiple of 16 rows per
// producer pass), 3 stages, bf16, bias, runtime dims.
#define DTYPE 2
#define WG_M 3
#define BN 88
#define STAGES 3
#define SPLITK 1
#define EPILOGUE 1
#define dietcode_dense_wgmma w5_main
#define dietcode_dense_wgmma_reduce w5_reduce
namespace w5 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 9: four consumers, n72, 2 stages, f16, split-K 2, gelu, static K = 100 (the
// scalar load path).
#define DTYPE 1
#define WG_M 4
#define BN 72
#define STAGES 2
#define SPLITK 2
#define EPILOGUE 4
#define STATIC_K 100
#define dietcode_dense_wgmma w6_main
#define dietcode_dense_wgmma_reduce w6_reduce
namespace w6 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 10: the TMA producer, two consumers, n168, 4 stages, bf16, bias + gelu, static
// N = 337 (two blocks, the second mostly past N) and K = 200.
#define DTYPE 2
#define WG_M 2
#define BN 168
#define STAGES 4
#define SPLITK 1
#define EPILOGUE 5
#define STATIC_N 337
#define STATIC_K 200
#define PRODUCER 1
#define dietcode_dense_wgmma t4_main
#define dietcode_dense_wgmma_reduce t4_reduce
namespace t4 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 11: the TMA producer, four consumers, n104, 3 stages, f16, split-K 3, relu,
// runtime dims.
#define DTYPE 1
#define WG_M 4
#define BN 104
#define STAGES 3
#define SPLITK 3
#define EPILOGUE 2
#define PRODUCER 1
#define dietcode_dense_wgmma t5_main
#define dietcode_dense_wgmma_reduce t5_reduce
namespace t5 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// Configuration 12: the staged store, three consumers, n88 (a 64-column chunk and a 24-column
// one), 3 stages, bf16, bias, runtime dims.
#define DTYPE 2
#define WG_M 3
#define BN 88
#define STAGES 3
#define SPLITK 1
#define EPILOGUE 1
#define EPI_SMEM 1
#define dietcode_dense_wgmma s1_main
#define dietcode_dense_wgmma_reduce s1_reduce
namespace s1 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 13: the staged store with the TMA producer, two consumers, n256 (four chunks),
// 2 stages, f16, bias + gelu, runtime dims.
#define DTYPE 1
#define WG_M 2
#define BN 256
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 5
#define EPI_SMEM 1
#define PRODUCER 1
#define dietcode_dense_wgmma s2_main
#define dietcode_dense_wgmma_reduce s2_reduce
namespace s2 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// Configuration 14: blocks walk M tiles first, one consumer, n64, 2 stages, bf16, bias, runtime
// dims.
#define DTYPE 2
#define WG_M 1
#define BN 64
#define STAGES 2
#define SPLITK 1
#define EPILOGUE 1
#define M_FASTEST 1
#define dietcode_dense_wgmma m1_main
#define dietcode_dense_wgmma_reduce m1_reduce
namespace m1 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"

// Configuration 15: M tiles first with the TMA producer, two consumers, n88, split-K 2, relu.
#define DTYPE 1
#define WG_M 2
#define BN 88
#define STAGES 3
#define SPLITK 2
#define EPILOGUE 2
#define M_FASTEST 1
#define PRODUCER 1
#define dietcode_dense_wgmma m2_main
#define dietcode_dense_wgmma_reduce m2_reduce
namespace m2 {
#include "../../templates/dense_wgmma.cu"
}
#include "nvrtc/tc_emulation_undef.h"
// clang-format on

#include "codegen/generated_kernel.h"
#include "nvrtc/tc_emulated_case.h"

namespace dietcode {
namespace {

using testing::EmuShape;
using testing::run_case;
using testing::run_shape;

TEST(DenseWgmmaEmulated, OneConsumerN64TwoStagesManyRounds) {
  const auto k = EMU_KERNEL(w1, DType::kBFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 64);
  EXPECT_EQ(k.threads, 256);
  EXPECT_EQ(k.smem_bytes, 2 * (64 + 64) * 128 + 2048);
  run_case(k, 1, 64, 64);
  run_case(k, 65, 70, 640);     // 10 K tiles: five rounds of a 2-stage ring
  run_case(k, 200, 9, 136, 1);  // one block row walks 4 M tiles; the ring carries over
  run_case(k, 3, 5, 13);        // K % 8 != 0 at run time: scalar loads
}

TEST(DenseWgmmaEmulated, TwoConsumersN128SplitK3RuntimeDims) {
  const auto k = EMU_KERNEL(w2, DType::kFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 128);
  EXPECT_EQ(k.threads, 384);
  for (int64_t K : {1, 64, 456, 1000}) run_case(k, 130, 129, K);
  run_case(k, 17, 33, 200, 1);
}

TEST(DenseWgmmaEmulated, TwoConsumersN256StaticOddN) {
  const auto k = EMU_KERNEL(w3, DType::kBFloat16, Epilogue::kBiasRelu);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 256);
  for (int64_t M : {1, 127, 129}) run_case(k, M, 301, 200);
  run_case(k, 300, 301, 200, 1);
}

TEST(DenseWgmmaEmulated, SixStagesStaticKNotAMultipleOf8SplitK2) {
  const auto k = EMU_KERNEL(w4, DType::kFloat16, Epilogue::kGelu);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 128);
  for (int64_t M : {1, 64, 65}) run_case(k, M, 130, 100);
}

TEST(DenseWgmmaEmulated, ThreeConsumersN88) {
  const auto k = EMU_KERNEL(w5, DType::kBFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bm, 192);
  EXPECT_EQ(k.bn, 88);
  EXPECT_EQ(k.threads, 512);
  EXPECT_EQ(k.smem_bytes, 3 * (192 + 88) * 128 + 2048);
  run_case(k, 1, 88, 64);
  run_case(k, 193, 177, 456);   // a second M tile of one row; N one past two tiles
  run_case(k, 400, 89, 200, 1);  // one block row walks 3 M tiles; the ring carries over
}

TEST(DenseWgmmaEmulated, FourConsumersN72SplitK2StaticKNotAMultipleOf8) {
  const auto k = EMU_KERNEL(w6, DType::kFloat16, Epilogue::kGelu);
  EXPECT_EQ(k.bm, 256);
  EXPECT_EQ(k.bn, 72);
  EXPECT_EQ(k.threads, 640);
  for (int64_t M : {1, 255, 257}) run_case(k, M, 145, 100);
}

TEST(DenseWgmmaEmulatedTma, OneConsumerN64TwoStagesManyRounds) {
  const auto k = EMU_TMA_KERNEL(t1, DType::kBFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bm, 64);
  EXPECT_EQ(k.bn, 64);
  EXPECT_EQ(k.threads, 256);
  EXPECT_EQ(k.smem_bytes, 2 * (64 + 64) * 128 + 2048);
  run_case(k, 1, 64, 64);
  run_case(k, 1, 1, 8);         // one element of every box is real, the rest is fill
  run_case(k, 65, 70, 640);     // 10 K tiles: five rounds of a 2-stage ring
  run_case(k, 200, 9, 136, 1);  // one block row walks 4 M tiles; the ring carries over
}

TEST(DenseWgmmaEmulatedTma, TwoConsumersN256SplitK3StaticOddN) {
  const auto k = EMU_TMA_KERNEL(t2, DType::kFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 256);
  EXPECT_EQ(k.split_k, 3);
  for (int64_t M : {1, 127, 129}) run_case(k, M, 301, 456);
  run_case(k, 300, 301, 456, 1);
}

TEST(DenseWgmmaEmulatedTma, TwoConsumersN128SplitK2RuntimeDims) {
  const auto k = EMU_TMA_KERNEL(t3, DType::kBFloat16, Epilogue::kRelu);
  for (int64_t K : {8, 64, 200, 1000}) run_case(k, 130, 129, K);
  run_case(k, 17, 33, 200, 1);
}

// The host refuses what the TMA cannot address, before anything is launched: a K that is not a
// multiple of 8 leaves rows off the 16-byte pitch the tensor map needs.
TEST(DenseWgmmaEmulatedTma, KNotAMultipleOf8IsRefusedByTheHost) {
  const auto k = EMU_TMA_KERNEL(t1, DType::kBFloat16, Epilogue::kBias);
  try {
    run_case(k, 3, 5, 13);
    FAIL() << "a K of 13 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no tensor map: rows are not a multiple of 16 bytes apart (K % 8 != 0)");
  }
}

// batch_matmul with A[b] = [M,K] and B[b] = [N,K]: each batch element from its own strides,
// with tails in M, N and K and split-K, for both producers. The TMA reads the batch element
// as the third coordinate of its maps, whose batch stride is the call's.
TEST(DenseWgmmaEmulatedBatch, CpAsyncSplitK3BatchOfThree) {
  const auto k = EMU_KERNEL(w2, DType::kFloat16, Epilogue::kBiasGelu);
  run_shape(k, EmuShape{3, 65, 129, 200, 8});
  run_shape(k, EmuShape{2, 17, 33, 13, 8});  // K % 8 != 0: scalar loads
}

TEST(DenseWgmmaEmulatedBatch, CpAsyncStaticKScalarPathBatchOfTwo) {
  const auto k = EMU_KERNEL(w4, DType::kFloat16, Epilogue::kGelu);
  run_shape(k, EmuShape{2, 65, 130, 100, 8});
}

TEST(DenseWgmmaEmulatedBatch, TmaBatchOfThree) {
  const auto k = EMU_TMA_KERNEL(t1, DType::kBFloat16, Epilogue::kBias);
  run_shape(k, EmuShape{3, 65, 70, 136, 8});
  run_shape(k, EmuShape{3, 1, 1, 8, 0});         // packed; every box mostly fill
  run_shape(k, EmuShape{2, 200, 9, 64, 16}, 1);  // one block row walks 4 M tiles per element
}

TEST(DenseWgmmaEmulatedBatch, TmaSplitK2BatchOfTwo) {
  const auto k = EMU_TMA_KERNEL(t3, DType::kBFloat16, Epilogue::kRelu);
  run_shape(k, EmuShape{2, 130, 129, 200, 8});
  run_shape(k, EmuShape{3, 17, 33, 72, 0});
}

TEST(DenseWgmmaEmulatedTma, TwoConsumersN168StaticOddN) {
  const auto k = EMU_TMA_KERNEL(t4, DType::kBFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bm, 128);
  EXPECT_EQ(k.bn, 168);
  for (int64_t M : {1, 128, 129}) run_case(k, M, 337, 200);
}

TEST(DenseWgmmaEmulatedTma, FourConsumersN104SplitK3RuntimeDims) {
  const auto k = EMU_TMA_KERNEL(t5, DType::kFloat16, Epilogue::kRelu);
  EXPECT_EQ(k.bm, 256);
  EXPECT_EQ(k.bn, 104);
  EXPECT_EQ(k.split_k, 3);
  for (int64_t K : {8, 200, 1000}) run_case(k, 257, 105, K);
}

// The staged store: 16-byte pieces where N is a multiple of 8 (176, 264), output by output
// where it is not (177, 265) and at the last piece of a row; rows past M dropped; batch
// elements whose start is not 16-byte aligned (a gap of 3 elements) take the narrow path too.
TEST(DenseWgmmaEmulatedStagedStore, ThreeConsumersN88) {
  const auto k = EMU_KERNEL(s1, DType::kBFloat16, Epilogue::kBias);
  EXPECT_EQ(k.bn, 88);
  EXPECT_EQ(k.smem_bytes, 3 * (192 + 88) * 128 + 2048 + 12 * 16 * 144);
  for (int64_t N : {176, 177, 5}) run_case(k, 193, N, 200);
  run_case(k, 1, 88, 64);
  run_shape(k, EmuShape{2, 70, 176, 72, 3});
}

TEST(DenseWgmmaEmulatedStagedStore, TmaTwoConsumersN256) {
  const auto k = EMU_TMA_KERNEL(s2, DType::kFloat16, Epilogue::kBiasGelu);
  EXPECT_EQ(k.bn, 256);
  for (int64_t N : {264, 265}) run_case(k, 130, N, 136);
  run_case(k, 300, 256, 64, 1);  // one block row walks 3 M tiles, storing each
}

// M_FASTEST renumbers the blocks (M tiles of one N tile consecutive): every tile is still
// computed once, with a grid of several M and N tiles, batches and split-K slices, and with the
// grid's y capped (then blocks walk M tiles as without it).
TEST(DenseWgmmaEmulatedMFastest, OneConsumerN64) {
  const auto k = EMU_KERNEL(m1, DType::kBFloat16, Epilogue::kBias);
  run_case(k, 200, 130, 72);
  run_case(k, 200, 130, 72, 2);  // capped: two block rows walk the four M tiles
  run_shape(k, EmuShape{3, 65, 129, 64, 8});
}

TEST(DenseWgmmaEmulatedMFastest, TmaTwoConsumersN88SplitK2) {
  const auto k = EMU_TMA_KERNEL(m2, DType::kFloat16, Epilogue::kRelu);
  run_case(k, 300, 177, 200);
  run_shape(k, EmuShape{2, 129, 89, 136, 8});
}

// M_TILES: the launch plan's grid gives each block several M tiles of one column, which it
// computes in turn with the ring running on from one to the next (the producer fills the next
// tile's stages while the consumers store the last). The grid here is LaunchPlan's own.
void run_walking(const testing::EmuKernel& k, int m_tiles_per_block, int64_t M, int64_t N,
                 int64_t K) {
  LaunchPlan plan;
  plan.tile_m = k.bm, plan.tile_n = k.bn, plan.split_k = k.split_k;
  plan.m_tiles_per_block = m_tiles_per_block;
  unsigned dims[3];
  plan.grid(GemmShape{1, M, N, K}, dims);
  const int64_t m_tiles = (M + k.bm - 1) / k.bm;
  EXPECT_EQ(dims[1], unsigned((m_tiles + m_tiles_per_block - 1) / m_tiles_per_block));
  SCOPED_TRACE("M_TILES=" + std::to_string(m_tiles_per_block));
  run_case(k, M, N, K, dims[1]);
}

TEST(DenseWgmmaEmulatedMTiles, EveryWalkLengthWithBothProducersAndSplitK) {
  const auto cp_async = EMU_KERNEL(w5, DType::kBFloat16, Epilogue::kBias);
  const auto tma = EMU_TMA_KERNEL(t3, DType::kBFloat16, Epilogue::kRelu);
  const auto split = EMU_KERNEL(w2, DType::kFloat16, Epilogue::kBiasGelu);
  for (int walk : {2, 3, 4}) {
    run_walking(cp_async, walk, 5 * 192 + 1, 97, 200);  // 6 M tiles: some walks are short
    run_walking(tma, walk, 5 * 128 - 5, 264, 136);      // TMA and split-K 2
    run_walking(split, walk, 4 * 128, 129, 456);        // split-K 3, K not a multiple of 64
  }
}

TEST(DenseWgmmaEmulatedMTiles, StagedStoreStoresEveryTileOfTheWalk) {
  const auto tma = EMU_TMA_KERNEL(s2, DType::kFloat16, Epilogue::kBiasGelu);
  const auto cp_async = EMU_KERNEL(s1, DType::kBFloat16, Epilogue::kBias);
  for (int walk : {2, 4}) {
    run_walking(tma, walk, 5 * 128 + 3, 265, 136);
    run_walking(cp_async, walk, 3 * 192 + 7, 89, 72);
  }
}

}  // namespace
}  // namespace dietcode
