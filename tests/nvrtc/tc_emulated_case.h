// One emulated tensor-core kernel on one shape against the 16-bit CPU reference: shared by the
// emulated tests of dense_tc and dense_wgmma. Include after tc_emulation.h and the templates.
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

#define EMU_KERNEL_WITH(ns, dtype, epi, launch)                                                 \
  ::dietcode::testing::EmuKernel {                                                              \
#ns, launch, ns::ns##_reduce, ns::dc::kThreads, ns::dc::kBM, ns::dc::kBN, ns::dc::kSplitK, \
        ns::dc::kSmemBytes, dtype, epi                                                          \
  }

// A kernel that takes DietcodeArgs alone.
#define EMU_KERNEL(ns, dtype, epi)                                                 \
  EMU_KERNEL_WITH(ns, dtype, epi,                                                  \
                  [](const unsigned grid[3], int threads, const DietcodeArgs& a) { \
                    emu_launch(ns::ns##_main, grid, threads, a);                   \
                  })

// A kernel with a TMA producer: the args, then the maps of A (BM-row boxes) and B (BN-row).
#define EMU_TMA_KERNEL(ns, dtype, epi)                                                   \
  EMU_KERNEL_WITH(                                                                       \
      ns, dtype, epi, [](const unsigned grid[3], int threads, const DietcodeArgs& a) {   \
        using Map = ns::dc::TensorMap;                                                   \
        const Map map_a = ::dietcode::testing::emu_tensor_map<Map>(                      \
            dietcode_pack::kTensorMapA, a, ns::dc::kBM);                                 \
        const Map map_b = ::dietcode::testing::emu_tensor_map<Map>(                      \
            dietcode_pack::kTensorMapB, a, ns::dc::kBN);                                 \
        emu_launch(ns::ns##_main, grid, threads, a, map_a, map_b);                       \
      })

inline std::vector<uint16_t> random_elements(size_t n, DType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return floats_to_elements(v, dtype);
}

// Runs one kernel on one shape with the grid's y clamped to grid_y_cap (to exercise the loop
// over M tiles), checks it against the reference and that nothing outside Y was written.
inline void run_case(const EmuKernel& k, int64_t M, int64_t N, int64_t K,
                     unsigned grid_y_cap = 65535) {
  SCOPED_TRACE(k.name + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
               " K=" + std::to_string(K));
  ASSERT_LE(k.smem_bytes, int(sizeof(dc_smem)));
  std::mt19937 rng(unsigned(M * 131 + N * 7 + K));
  const auto x = random_elements(size_t(M * K), k.dtype, rng);
  const auto w = random_elements(size_t(N * K), k.dtype, rng);
  const auto bias = random_elements(size_t(N), k.dtype, rng);
  const size_t guard = 64;
  std::vector<uint16_t> y(size_t(M * N) + guard, 0xFFFF);  // NaN in both types
  std::vector<float> ws(size_t(k.split_k * M * N) + guard, std::nanf(""));

  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.data();
  args.b = w.data();
  args.bias = bias.data();
  args.c = y.data();
  args.workspace = k.split_k > 1 ? ws.data() : nullptr;
  args.batch = 1, args.m = M, args.n = N, args.k = K;
  args.stride_a = M * K, args.stride_b = N * K, args.stride_c = M * N;

  const unsigned m_tiles = unsigned((M + k.bm - 1) / k.bm);
  const unsigned grid[3] = {unsigned((N + k.bn - 1) / k.bn), std::min(m_tiles, grid_y_cap),
                            unsigned(k.split_k)};
  k.main(grid, k.threads, args);
  if (k.split_k > 1) {
    const int reduce_threads = 64;
    const unsigned rgrid[3] = {unsigned((M * N + reduce_threads * 4 - 1) / (reduce_threads * 4)), 1,
                               1};
    emu_launch(k.reduce, rgrid, reduce_threads, args);
    for (size_t i = size_t(k.split_k * M * N); i < ws.size(); ++i)
      ASSERT_TRUE(std::isnan(ws[i])) << "workspace written past its end at " << i;
  }
  for (size_t i = size_t(M * N); i < y.size(); ++i)
    ASSERT_EQ(y[i], 0xFFFF) << "Y written past its end at " << i;

  const bool with_bias = epilogue_has_bias(k.epilogue);
  const auto acc = dense_accumulate_16bit(x.data(), w.data(), M, N, K, k.dtype, 1);
  const auto want =
      dense_apply_epilogue_16bit(acc, with_bias ? bias.data() : nullptr, k.epilogue, M, k.dtype);
  const auto cmp =
      compare_dense_16bit(y.data(), want, acc, with_bias ? bias.data() : nullptr, M, k.dtype);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

}  // namespace dietcode::testing
