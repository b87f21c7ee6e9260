// One emulated tensor-core kernel on one shape (one GEMM or a batch of them, A[b] = [M,K] and
// B[b] = [N,K] or [K,N]) against the 16-bit CPU reference: shared by the emulated tests of dense_tc
// and dense_wgmma. Include after tc_emulation.h and the templates.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "measure/cpu_reference_half.h"

namespace dietcode::testing {

// Launches a kernel's main entry on a grid (the entries differ in their parameters).
using EmuMainLaunch = std::function<void(const unsigned grid[3], int threads, const DietcodeArgs&)>;

struct EmuKernel {
  std::string name;
  EmuMainLaunch main;
  void (*reduce)(DietcodeArgs);
  int threads, bm, bn, split_k, smem_bytes;
  DType dtype;
  Epilogue epilogue;
};

// The tensor map of operand `which` for a call, as the pack runtime and the measurer make it
// (pack_tensor_maps.h), encoded by the emulation's stand-in for cuTensorMapEncodeTiled.
template <class Map>
Map emu_tensor_map(int which, const DietcodeArgs& args, int box_rows) {
  dietcode_pack::TensorMapLayout layout;
  if (const char* why = dietcode_pack::tensor_map_layout(which, args, box_rows, 64, 2, &layout))
    throw std::invalid_argument(std::string("no tensor map: ") + why);
  CUtensorMap encoded;
  if (dietcode_pack::encode_tensor_map(emu_encode_tensor_map, layout, &encoded) != CUDA_SUCCESS)
    throw std::invalid_argument("the stand-in encoder refused the layout");
  static_assert(sizeof(Map) == sizeof(CUtensorMap), "the kernel's map is a CUtensorMap");
  Map map;
  std::memcpy(&map, &encoded, sizeof(map));
  return map;
}

#define EMU_KERNEL_WITH(ns, dtype, epi, launch)                                                \
  ::dietcode::testing::EmuKernel {                                                             \
#ns, launch, ns::ns##_reduce, ns::dc::kThreads, ns::dc::kBM, ns::dc::kBN, ns::dc::kSplitK, \
        ns::dc::kSmemBytes, dtype, epi                                                         \
  }

// A kernel that takes DietcodeArgs alone.
#define EMU_KERNEL(ns, dtype, epi)                                                                 \
  EMU_KERNEL_WITH(ns, dtype, epi, [](const unsigned grid[3], int threads, const DietcodeArgs& a) { \
    emu_launch(ns::ns##_main, grid, threads, a);                                                   \
  })

// A kernel with a TMA producer: the args, then the maps of A (BM-row boxes) and B (BN-row).
#define EMU_TMA_KERNEL(ns, dtype, epi)                                                             \
  EMU_KERNEL_WITH(ns, dtype, epi, [](const unsigned grid[3], int threads, const DietcodeArgs& a) { \
    using Map = ns::dc::TensorMap;                                                                 \
    const Map map_a =                                                                              \
        ::dietcode::testing::emu_tensor_map<Map>(dietcode_pack::kTensorMapA, a, ns::dc::kBM);      \
    const Map map_b =                                                                              \
        ::dietcode::testing::emu_tensor_map<Map>(dietcode_pack::kTensorMapB, a, ns::dc::kBN);      \
    emu_launch(ns::ns##_main, grid, threads, a, map_a, map_b);                                     \
  })

inline std::vector<uint16_t> random_elements(size_t n, DType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return floats_to_elements(v, dtype);
}

// One call's shape: `batch` GEMMs of M x N x K. A batch element's operands and output start
// `gap` elements after the previous one ends (strides M*K + gap, N*K + gap, M*N + gap), so a
// kernel that ignores the strides, or touches a neighbour, shows. A multiple of 8 keeps every
// batch element as aligned as the first.
struct EmuShape {
  int64_t batch = 1, M = 0, N = 0, K = 0, gap = 0;
  bool b_k_contiguous = true;  // B[b] stored [N,K]; false: [K,N] (dense_tc's B_K_CONTIGUOUS 0)
};

// Runs one kernel on one shape with the grid's y clamped to grid_y_cap (to exercise the loop
// over M tiles) and checks it against the reference batch element by batch element. The gaps
// between batch elements hold NaN: a read of one into a real output poisons it, a write to
// one is caught, and so is a write past the end of Y or of the split-K workspace.
inline void run_shape(const EmuKernel& k, const EmuShape& s, unsigned grid_y_cap = 65535) {
  const int64_t M = s.M, N = s.N, K = s.K, batch = s.batch, gap = s.gap;
  SCOPED_TRACE(k.name + " batch=" + std::to_string(batch) + " M=" + std::to_string(M) +
               " N=" + std::to_string(N) + " K=" + std::to_string(K) +
               " gap=" + std::to_string(gap) + (s.b_k_contiguous ? "" : " B stored [K,N]"));
  ASSERT_LE(k.smem_bytes, int(sizeof(dc_smem)));
  std::mt19937 rng(unsigned(M * 131 + N * 7 + K + batch * 1009));
  // Packed operands for the reference, then spread out to the strides the kernel reads.
  const auto x = random_elements(size_t(batch * M * K), k.dtype, rng);
  const auto w = random_elements(size_t(batch * N * K), k.dtype, rng);
  const auto bias = random_elements(size_t(N), k.dtype, rng);
  const int64_t stride_a = M * K + gap, stride_b = N * K + gap, stride_c = M * N + gap;
  auto spread = [&](const std::vector<uint16_t>& packed, int64_t size, int64_t stride) {
    std::vector<uint16_t> out(size_t(batch * stride), 0xFFFF);  // NaN in both types
    for (int64_t e = 0; e < batch; ++e)
      std::copy_n(packed.begin() + e * size, size, out.begin() + e * stride);
    return out;
  };
  const auto a = spread(x, M * K, stride_a), b = spread(w, N * K, stride_b);
  const size_t guard = 64;
  std::vector<uint16_t> y(size_t(batch * stride_c) + guard, 0xFFFF);
  const size_t ws_size = size_t(batch * k.split_k * M * N);
  std::vector<float> ws(ws_size + guard, std::nanf(""));

  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = a.data();
  args.b = b.data();
  args.bias = bias.data();
  args.c = y.data();
  args.workspace = k.split_k > 1 ? ws.data() : nullptr;
  args.batch = batch, args.m = M, args.n = N, args.k = K;
  args.stride_a = stride_a, args.stride_b = stride_b, args.stride_c = stride_c;

  const unsigned m_tiles = unsigned((M + k.bm - 1) / k.bm);
  const unsigned grid[3] = {unsigned((N + k.bn - 1) / k.bn), std::min(m_tiles, grid_y_cap),
                            unsigned(batch * k.split_k)};
  k.main(grid, k.threads, args);
  if (k.split_k > 1) {
    const int reduce_threads = 64;
    const int64_t outputs = batch * M * N;
    const unsigned rgrid[3] = {unsigned((outputs + reduce_threads * 4 - 1) / (reduce_threads * 4)),
                               1, 1};
    emu_launch(k.reduce, rgrid, reduce_threads, args);
    for (size_t i = ws_size; i < ws.size(); ++i)
      ASSERT_TRUE(std::isnan(ws[i])) << "workspace written past its end at " << i;
  }
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = M * N; i < stride_c; ++i)
      ASSERT_EQ(y[size_t(e * stride_c + i)], 0xFFFF) << "Y written in the gap after batch " << e;
  for (size_t i = size_t(batch * stride_c); i < y.size(); ++i)
    ASSERT_EQ(y[i], 0xFFFF) << "Y written past its end at " << i;

  const bool with_bias = epilogue_has_bias(k.epilogue);
  const auto acc = batch_matmul_accumulate_16bit(x.data(), w.data(), batch, M, N, K, false,
                                                 s.b_k_contiguous, k.dtype, 1);
  const auto want = dense_apply_epilogue_16bit(acc, with_bias ? bias.data() : nullptr, k.epilogue,
                                               batch * M, k.dtype);
  std::vector<uint16_t> got(size_t(batch * M * N));
  for (int64_t e = 0; e < batch; ++e)
    std::copy_n(y.begin() + e * stride_c, M * N, got.begin() + e * M * N);
  const auto cmp = compare_dense_16bit(got.data(), want, acc, with_bias ? bias.data() : nullptr,
                                       batch * M, k.dtype);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

// A dense layer: one GEMM, operands packed.
inline void run_case(const EmuKernel& k, int64_t M, int64_t N, int64_t K,
                     unsigned grid_y_cap = 65535) {
  run_shape(k, EmuShape{1, M, N, K, 0}, grid_y_cap);
}

}  // namespace dietcode::testing
