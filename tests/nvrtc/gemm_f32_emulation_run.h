// Runs a host-emulated fp32 GEMM kernel (TEST DOUBLE, dense_f32_emulation.h) the way a launch
// plan does: the main kernel over grid (ceil(N/BN), min(ceil(M/BM), grid_y_cap), batch*SPLITK),
// then the split-K reduction, into NaN-filled output and workspace with guard elements past
// their ends, which must stay NaN. Include after the emulation header and the templates.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../templates/dietcode_args.h"
#include "workload/workload.h"

namespace dietcode::testing {

struct EmuKernel {
  std::string name;
  void (*main)(DietcodeArgs);
  void (*reduce)(DietcodeArgs);
  int threads, bm, bn, split_k, smem_bytes;
};

#define EMU_KERNEL(ns)                                                               \
  ::dietcode::testing::EmuKernel {                                                   \
#ns, ns::ns##_main, ns::ns##_reduce, ns::dc::kThreads, ns::dc::kBM, ns::dc::kBN, \
        ns::dc::kSplitK, ns::dc::kSmemBytes                                          \
  }

inline std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// args: operands and shape fields set by the caller; c and workspace are filled in here.
// Returns the batch*M*N outputs; a write past them fails the test.
inline std::vector<float> emu_run(const EmuKernel& k, DietcodeArgs args, const GemmShape& shape,
                                  unsigned grid_y_cap = 65535) {
  EXPECT_LE(k.smem_bytes, int(sizeof(dc_smem)));
  const size_t guard = 64;
  const size_t outputs = size_t(shape.batch * shape.M * shape.N);
  std::vector<float> c(outputs + guard, std::nanf(""));
  std::vector<float> ws(size_t(k.split_k) * outputs + guard, std::nanf(""));
  args.c = c.data();
  args.workspace = k.split_k > 1 ? ws.data() : nullptr;
  const unsigned m_tiles = unsigned((shape.M + k.bm - 1) / k.bm);
  const unsigned grid[3] = {unsigned((shape.N + k.bn - 1) / k.bn), std::min(m_tiles, grid_y_cap),
                            unsigned(shape.batch * k.split_k)};
  emu_launch(k.main, grid, k.threads, args);
  if (k.split_k > 1) {
    const int reduce_threads = 64;
    const unsigned rgrid[3] = {unsigned((outputs + reduce_threads * 4 - 1) / (reduce_threads * 4)),
                               1, 1};
    emu_launch(k.reduce, rgrid, reduce_threads, args);
    for (size_t i = size_t(k.split_k) * outputs; i < ws.size(); ++i)
      EXPECT_TRUE(std::isnan(ws[i])) << "workspace written past its end at " << i;
  }
  for (size_t i = outputs; i < c.size(); ++i)
    EXPECT_TRUE(std::isnan(c[i])) << "C written past its end at " << i;
  c.resize(outputs);
  return c;
}

}  // namespace dietcode::testing
