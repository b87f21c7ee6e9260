// The 16-bit reference kernel (templates/reference_gemm.cu with DTYPE 1 or 2) — what GPU
// measurements of tensor-core candidates are checked against — run on the CPU through the
// device-dialect TEST DOUBLE (tc_emulation.h): its integer-only conversions must reproduce the
// CPU reference bit for bit (same k order in double, same rounding to nearest even), including
// subnormal float16 inputs and outputs, for every epilogue; and batch_matmul in every layout.
#include <gtest/gtest.h>

#include <cstring>

#include "nvrtc/tc_emulation.h"

inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
using std::tanh;

// clang-format off
#include "../../templates/dietcode_args.h"
#define DTYPE 1
#define EPILOGUE 5
#define dietcode_reference_gemm ref_f16_main
namespace ref_f16 {
#include "../../templates/reference_gemm.cu"
}
#undef DTYPE
#undef EPILOGUE
#undef dietcode_reference_gemm
#define DTYPE 2
#define EPILOGUE 3
#define dietcode_reference_gemm ref_bf16_main
namespace ref_bf16 {
#include "../../templates/reference_gemm.cu"
}
#undef DTYPE
#undef EPILOGUE
#undef dietcode_reference_gemm
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
// batch_matmul in 16 bits, in the three layouts other than dense's (A [M,K], B [N,K]).
#define DTYPE 2
#define EPILOGUE 0
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define dietcode_reference_gemm ref_nn_main
namespace ref_nn {
#include "../../templates/reference_gemm.cu"
}
#undef DTYPE
#undef EPILOGUE
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef dietcode_reference_gemm
#define DTYPE 1
#define EPILOGUE 2
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 1
#define dietcode_reference_gemm ref_tt_main
namespace ref_tt {
#include "../../templates/reference_gemm.cu"
}
#undef DTYPE
#undef EPILOGUE
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef dietcode_reference_gemm
#define DTYPE 2
#define EPILOGUE 4
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 0
#define dietcode_reference_gemm ref_tn_main
namespace ref_tn {
#include "../../templates/reference_gemm.cu"
}
#undef DTYPE
#undef EPILOGUE
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef dietcode_reference_gemm
// clang-format on

#include <random>

#include "measure/cpu_reference_half.h"

namespace dietcode {
namespace {

// What a run's float16 outputs exercised of the rounding code.
struct Coverage {
  int subnormal = 0, infinite = 0;
};

// Runs the kernel on random inputs in [-scale, scale] and compares bit for bit.
Coverage check(void (*kernel)(DietcodeArgs), DType dtype, Epilogue epilogue, float scale) {
  SCOPED_TRACE(std::string(to_string(dtype)) + " scale " + std::to_string(scale));
  const int64_t M = 20, N = 33, K = 40;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-scale, scale);
  auto random = [&](int64_t count) {
    std::vector<float> v(static_cast<size_t>(count));
    for (auto& e : v) e = dist(rng);
    return floats_to_elements(v, dtype);
  };
  const auto x = random(M * K), w = random(N * K), bias = random(N);
  std::vector<uint16_t> y(size_t(M * N), 0xFFFF);
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.data(), args.b = w.data(), args.bias = bias.data(), args.c = y.data();
  args.batch = 1, args.m = M, args.n = N, args.k = K;
  args.stride_a = M * K, args.stride_b = N * K, args.stride_c = M * N;
  const unsigned grid[3] = {unsigned((N + 15) / 16), unsigned((M + 15) / 16), 1};
  emu_launch(kernel, grid, 256, args);

  const auto acc = dense_accumulate_16bit(x.data(), w.data(), M, N, K, dtype, 1);
  const auto want =
      floats_to_elements(dense_apply_epilogue_16bit(acc, bias.data(), epilogue, M, dtype), dtype);
  Coverage c;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], want[i]) << "element " << i;
    c.subnormal += (want[i] & 0x7C00) == 0 && (want[i] & 0x3FF) != 0;
    c.infinite += (want[i] & 0x7FFF) == 0x7C00;
  }
  return c;
}

TEST(ReferenceGemmEmulated, Float16BiasGeluBitExact) {
  const Coverage unit = check(ref_f16::ref_f16_main, DType::kFloat16, Epilogue::kBiasGelu, 1.0f);
  EXPECT_GT(unit.subnormal, 0);  // the subnormal branch of the rounding
  check(ref_f16::ref_f16_main, DType::kFloat16, Epilogue::kBiasGelu, 0.004f);
  const Coverage big = check(ref_f16::ref_f16_main, DType::kFloat16, Epilogue::kBiasGelu, 200.0f);
  EXPECT_GT(big.infinite, 0);  // and the overflow to infinity
}

TEST(ReferenceGemmEmulated, Bfloat16BiasReluBitExact) {
  check(ref_bf16::ref_bf16_main, DType::kBFloat16, Epilogue::kBiasRelu, 1.0f);
  check(ref_bf16::ref_bf16_main, DType::kBFloat16, Epilogue::kBiasRelu, 1e-20f);
}

// batch_matmul: each batch element from its strides, in every layout other than dense's, bit
// for bit against batch_matmul_accumulate_16bit.
TEST(ReferenceGemmEmulated, BatchMatmulEveryLayoutBitExact) {
  struct Layout {
    void (*kernel)(DietcodeArgs);
    bool ta, tb;
    DType dtype;
    Epilogue epilogue;
  };
  const Layout layouts[] = {{ref_nn::ref_nn_main, false, false, DType::kBFloat16, Epilogue::kNone},
                            {ref_tt::ref_tt_main, true, true, DType::kFloat16, Epilogue::kRelu},
                            {ref_tn::ref_tn_main, true, false, DType::kBFloat16, Epilogue::kGelu}};
  const int64_t batch = 3, M = 17, N = 18, K = 21;
  for (const Layout& l : layouts) {
    SCOPED_TRACE(std::string("ta=") + (l.ta ? "1" : "0") + " tb=" + (l.tb ? "1" : "0"));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1, 1);
    auto random = [&](int64_t count) {
      std::vector<float> v(static_cast<size_t>(count));
      for (auto& e : v) e = dist(rng);
      return floats_to_elements(v, l.dtype);
    };
    const auto a = random(batch * M * K), b = random(batch * N * K);
    std::vector<uint16_t> y(size_t(batch * M * N), 0xFFFF);
    DietcodeArgs args;
    std::memset(&args, 0, sizeof(args));
    args.a = a.data(), args.b = b.data(), args.c = y.data();
    args.batch = batch, args.m = M, args.n = N, args.k = K;
    args.stride_a = M * K, args.stride_b = N * K, args.stride_c = M * N;
    const unsigned grid[3] = {unsigned((N + 15) / 16), unsigned((M + 15) / 16), unsigned(batch)};
    emu_launch(l.kernel, grid, 256, args);
    const auto acc =
        batch_matmul_accumulate_16bit(a.data(), b.data(), batch, M, N, K, l.ta, l.tb, l.dtype, 1);
    const auto want = floats_to_elements(
        dense_apply_epilogue_16bit(acc, nullptr, l.epilogue, batch * M, l.dtype), l.dtype);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], want[i]) << "element " << i;
  }
}

}  // namespace
}  // namespace dietcode
