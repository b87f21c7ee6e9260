// Correctness of the AVX-512 x86 kernel templates (Isa::kAvx512, microkernel_avx512.h).
//
// The test binary is built for x86-64-v3 like the others, and only the kernels are compiled
// for AVX-512 (a GCC target pragma around the template include), so the binary starts, runs
// gtest and skips on a CPU without AVX-512F (this build machine, AMD Zen 3) instead of dying
// of SIGILL in code outside the kernels. Generated packs compile AVX-512 candidates with
// -march=x86-64-v4 as a whole; the kernel code is the same.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "x86/serial_runtime.h"
#include "x86_kernel_harness.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512cd,avx512vl,avx512bw,avx512dq,avx2,fma")
#define DC_X86_ENABLE_AVX512 1
#include "x86/ops_x86.h"
#include "x86_form_kernels.h"

namespace {

using dc_x86::Epilogue;
using dc_x86::Isa;
using dc_x86::OpKind;
using dc_x86::Params;

template <OpKind OP, int EPI, class P>
int kernel(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OP, Epilogue(EPI), P>(a, rt);
}

void gelu16(const float* in, float* out) {
  _mm512_storeu_ps(out, dc_x86::gelu<dc_x86::Avx512>(_mm512_loadu_ps(in)));
}

}  // namespace
#pragma GCC pop_options

namespace {

using namespace dc_x86_test;

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }

template <class P>
DietcodeCpuKernelFn get(Op op, int epi) {
  switch (op) {
    case Op::kDense: {
      static const DietcodeCpuKernelFn t[6] = {
          kernel<OpKind::kDense, 0, P>, kernel<OpKind::kDense, 1, P>, kernel<OpKind::kDense, 2, P>,
          kernel<OpKind::kDense, 3, P>, kernel<OpKind::kDense, 4, P>, kernel<OpKind::kDense, 5, P>};
      return t[epi];
    }
    case Op::kBmmNN: return epi == 0 ? kernel<OpKind::kBatchMatmulNN, 0, P> : kernel<OpKind::kBatchMatmulNN, 5, P>;
    case Op::kBmmTN: return epi == 0 ? kernel<OpKind::kBatchMatmulTN, 0, P> : kernel<OpKind::kBatchMatmulTN, 5, P>;
    case Op::kBmmNT: return epi == 0 ? kernel<OpKind::kBatchMatmulNT, 0, P> : kernel<OpKind::kBatchMatmulNT, 5, P>;
    case Op::kBmmTT: return epi == 0 ? kernel<OpKind::kBatchMatmulTT, 0, P> : kernel<OpKind::kBatchMatmulTT, 5, P>;
    case Op::kConv2d: return epi == 3 ? kernel<OpKind::kConv2d, 3, P> : kernel<OpKind::kConv2d, 5, P>;
    case Op::kDenseKN: return epi == 0 ? kernel<OpKind::kDenseKN, 0, P> : kernel<OpKind::kDenseKN, 5, P>;
  }
  return nullptr;
}

template <class P>
void check_params(int threads) {
  const Tiles tiles{P::MR, P::NR, P::KC, P::MC, P::NC};
  dc_x86::SimpleThreadPool pool{threads};
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  int failures = 0;
  for (Op op : {Op::kDense, Op::kDenseKN, Op::kBmmNN, Op::kBmmTN, Op::kBmmNT, Op::kBmmTT, Op::kConv2d}) {
    const std::vector<Problem> shapes = op == Op::kConv2d ? conv_shapes() : gemm_shapes(op, tiles);
    const std::vector<int> epis = op == Op::kDense    ? std::vector<int>{0, 1, 2, 3, 4, 5}
                                  : op == Op::kConv2d ? std::vector<int>{3, 5}
                                                      : std::vector<int>{0, 5};
    for (const Problem& p : shapes) {
      Case c(p);
      for (int epi : epis)
        for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
          const std::string err = c.run_and_check(get<P>(op, epi), epi, rt);
          EXPECT_EQ(err, "") << "threads " << rt->threads;
          if (!err.empty() && ++failures > 5) return;
        }
    }
  }
}

#define SKIP_WITHOUT_AVX512() \
  if (!has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512F"

// 14 x 32 (28 accumulators of 32 registers), the AVX-512 analogue of 6x16.
TEST(X86KernelsAvx512, Mr14Nr32) {
  SKIP_WITHOUT_AVX512();
  check_params<Params<14, 32, 256, 56, 1024, 0, 0, 1, 0, 4, Isa::kAvx512>>(3);
}
// The thinnest tile (1 x 16), tiny blocks, direct A, loop order 1, prefetch.
TEST(X86KernelsAvx512, Mr1Nr16Direct) {
  SKIP_WITHOUT_AVX512();
  check_params<Params<1, 16, 16, 1, 32, 1, 0, 0, 4, 1, Isa::kAvx512>>(3);
}
// A wide tile (4 x 64), odd KC, THREADS_M 2.
TEST(X86KernelsAvx512, Mr4Nr64OddKc) {
  SKIP_WITHOUT_AVX512();
  check_params<Params<4, 64, 37, 8, 128, 0, 2, 1, 0, 3, Isa::kAvx512>>(2);
}

// C at every offset within a cache line: on 16-float vectors every vector of a misaligned row
// straddles two lines, so the kernels start their tiles on the first aligned column.
TEST(X86KernelsAvx512, COffsetsWithinALine) {
  SKIP_WITHOUT_AVX512();
  using P = Params<1, 16, 16, 1, 32, 1, 0, 0, 4, 1, Isa::kAvx512>;  // Mr1Nr16Direct's
  dc_x86::SimpleThreadPool pool{3};
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  check_c_offsets_within_a_line(&get<P>, Tiles{P::MR, P::NR, P::KC, P::MC, P::NC}, &serial,
                                &pooled);
}

TEST(X86KernelsAvx512, GeluMatchesScalarTanhForm) {
  SKIP_WITHOUT_AVX512();
  for (int i = -60000; i <= 60000; ++i) {
    float in[16], out[16];
    for (int l = 0; l < 16; ++l) in[l] = float(i) * 1e-4f * (1.0f + 1e-3f * float(l));
    gelu16(in, out);
    for (int l = 0; l < 16; ++l) {
      const double want = gelu_ref(in[l]);
      const double z = 1.5957691216057308 * (in[l] + 0.044715 * double(in[l]) * in[l] * in[l]);
      const double rtol = in[l] >= -2.5 ? 1e-6 : 1e-6 + std::fabs(z) * 2.4e-7;
      ASSERT_LE(std::fabs(out[l] - want), rtol * std::fabs(want) + 1e-30) << in[l];
    }
  }
}

// The dot-product form with 512-bit vectors: BERT's small-M tile, and one with a K block of
// two vectors and the automatic split.
TEST(X86KernelsAvx512, DotForm4x6) {
  SKIP_WITHOUT_AVX512();
  check_dot<dc_x86::DotParams<4, 6, 768, 1, 2, Isa::kAvx512>>(3);
}

TEST(X86KernelsAvx512, DotForm6x4SmallKc) {
  SKIP_WITHOUT_AVX512();
  check_dot<dc_x86::DotParams<6, 4, 32, 0, 1, Isa::kAvx512>>(2);
}

// The W-broadcast form with 512-bit vectors: a tile for M up to 16 (28 rows of W), and 6 x 64
// with W prefetched and a K block that does not divide K.
TEST(X86KernelsAvx512, WbcastForm28x16) {
  SKIP_WITHOUT_AVX512();
  check_wbcast<Params<28, 16, 768, 56, 64, 0, 0, 0, 0, 4, Isa::kAvx512>>(3);
}
// The tile BERT's tunes choose most (8 rows of W x 32 of X), in K blocks of 40, so that every
// block after the first reads C back: the transposed store's 8x8 transposes both ways, with
// the odd shapes' partial tiles beside them.
TEST(X86KernelsAvx512, WbcastForm8x32TransposedStoreEveryKBlock) {
  SKIP_WITHOUT_AVX512();
  check_wbcast<Params<8, 32, 40, 16, 64, 0, 1, 0, 0, 2, Isa::kAvx512>>(2);
}
TEST(X86KernelsAvx512, WbcastForm6x64PrefetchOddKc) {
  SKIP_WITHOUT_AVX512();
  check_wbcast<Params<6, 64, 37, 12, 128, 1, 2, 0, 16, 2, Isa::kAvx512>>(2);
}

}  // namespace
