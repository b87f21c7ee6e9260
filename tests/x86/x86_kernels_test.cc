// Correctness of the AVX2 x86 kernel templates (templates/x86/ops_x86.h) against a double
// reference: every op, every epilogue, parameter sets from the defaults to the extremes, serial
// and pooled runtimes, odd shapes at every tile edge, NaN canaries around and between outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <utility>

#include "x86/ops_x86.h"
#include "x86/serial_runtime.h"
#include "x86_form_kernels.h"
#include "x86_kernel_harness.h"

namespace {

using namespace dc_x86_test;
using dc_x86::Epilogue;
using dc_x86::OpKind;
using dc_x86::Params;

template <OpKind OP, int EPI, class P, long SN = 0, long SK = 0>
int kernel(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OP, Epilogue(EPI), P, SN, SK>(a, rt);
}

// The kernels of one parameter set: dense with every epilogue, the others (dense with W [K][N]
// too) with two each.
template <class P>
struct Kernels {
  static DietcodeCpuKernelFn get(Op op, int epi) {
    switch (op) {
      case Op::kDense: {
        static const DietcodeCpuKernelFn t[6] = {
            kernel<OpKind::kDense, 0, P>, kernel<OpKind::kDense, 1, P>,
            kernel<OpKind::kDense, 2, P>, kernel<OpKind::kDense, 3, P>,
            kernel<OpKind::kDense, 4, P>, kernel<OpKind::kDense, 5, P>};
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
};

std::vector<int> epilogues_for(Op op) {
  if (op == Op::kDense) return {0, 1, 2, 3, 4, 5};
  if (op == Op::kConv2d) return {3, 5};
  return {0, 5};
}

// Checks one parameter set on every op with the serial runtime and a pool of `threads`.
template <class P>
void check_params_on(const DietcodeCpuRuntime& serial, const DietcodeCpuRuntime& pooled) {
  const Tiles tiles{P::MR, P::NR, P::KC, P::MC, P::NC};
  int failures = 0;
  for (Op op : {Op::kDense, Op::kDenseKN, Op::kBmmNN, Op::kBmmTN, Op::kBmmNT, Op::kBmmTT, Op::kConv2d}) {
    const std::vector<Problem> shapes = op == Op::kConv2d ? conv_shapes() : gemm_shapes(op, tiles);
    for (const Problem& p : shapes) {
      Case c(p);
      for (int epi : epilogues_for(op))
        for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
          const std::string err = c.run_and_check(Kernels<P>::get(op, epi), epi, rt);
          EXPECT_EQ(err, "") << "threads " << rt->threads;
          if (!err.empty() && ++failures > 5) return;
        }
    }
  }
}
template <class P>
void check_params(int threads) {
  dc_x86::SimpleThreadPool pool(threads);
  check_params_on<P>(dc_x86::serial_runtime(), pool.runtime());
}

TEST(X86Kernels, DotForm4x2) { check_dot<dc_x86::DotParams<4, 2, 256, 1, 2>>(3); }
TEST(X86Kernels, DotForm1x12AutoSplitSmallKc) { check_dot<dc_x86::DotParams<1, 12, 8, 0, 1>>(3); }
TEST(X86Kernels, DotForm3x3Unroll4SplitM) { check_dot<dc_x86::DotParams<3, 3, 64, 2, 4>>(2); }

// W-broadcast form: the default tile with W prefetched, loop order 1 with THREADS_M 2 (bands
// over W's rows), and a thin tile with small blocks and an odd K block.
TEST(X86Kernels, WbcastForm6x16Prefetch) {
  check_wbcast<Params<6, 16, 256, 72, 3072, 0, 0, 0, 8, 4>>(3);
}
TEST(X86Kernels, WbcastForm4x24Loop1SplitW) {
  check_wbcast<Params<4, 24, 64, 8, 48, 1, 2, 0, 4, 3>>(2);
}
TEST(X86Kernels, WbcastForm12x8OddKcTinyBlocks) {
  check_wbcast<Params<12, 8, 17, 12, 16, 0, 1, 0, 0, 1>>(3);
}
// Whole tiles of at most 8 rows of W on AVX2 store through an 8x8 register transpose, each C
// row taking MR floats in whole and half vectors: every height from 2 to 8 (the odd ones take
// a single float at the end), with K blocks of 9 and 16 so that C is read back and added to.
TEST(X86Kernels, WbcastFormTransposedStoreOfEveryHeight) {
  check_wbcast<Params<2, 16, 9, 8, 32, 0, 0, 0, 0, 2>>(2);
  check_wbcast<Params<3, 16, 16, 9, 32, 0, 0, 0, 4, 4>>(2);
  check_wbcast<Params<5, 16, 9, 10, 48, 1, 0, 0, 0, 1>>(2);
  check_wbcast<Params<7, 8, 16, 14, 16, 0, 1, 0, 0, 4>>(2);
  check_wbcast<Params<8, 8, 9, 16, 24, 0, 0, 0, 8, 3>>(3);
}
// PREFETCH_TILE: the next tile's rows of W prefetched, across MC blocks (MC = 2 tiles), the
// thread bands' ends and the last partial tile, in both loop orders.
TEST(X86Kernels, WbcastFormNextTilePrefetch) {
  using I = dc_x86::Isa;
  check_wbcast<Params<6, 16, 256, 12, 48, 0, 0, 0, 8, 4, I::kAvx2, 0, 1>>(3);
  check_wbcast<Params<4, 24, 40, 8, 48, 1, 2, 0, 16, 3, I::kAvx2, 0, 1>>(2);
}

// SHARE_X: X packed once for every worker, blocks of MC x NC handed out. On 2 workers
// (batch_matmul's 3 elements take runs there), on 5 (each of the 3 elements shared in turn),
// with an odd K block, loop order 1 and the next tile prefetched, and with blocks and panels
// so small that every shape has many of both.
TEST(X86Kernels, WbcastFormSharedX) {
  using I = dc_x86::Isa;
  check_wbcast<Params<4, 24, 64, 8, 48, 0, 0, 0, 4, 3, I::kAvx2, 0, 0, 1>>(2);
  check_wbcast<Params<6, 16, 17, 12, 16, 1, 0, 0, 8, 2, I::kAvx2, 0, 1, 1>>(5);
  check_wbcast<Params<2, 8, 9, 2, 8, 0, 0, 0, 0, 1, I::kAvx2, 0, 0, 1>>(3);
}

// A runtime that runs a call's tasks last to first, on worker ids that cycle through its four
// "workers", on the calling thread: the shared X's blocks must not lean on the order they are
// handed out in, and its panels must be whole before any block reads them.
void reversed_parallel_for(void*, int n, DietcodeCpuTask task, void* ctx) {
  for (int t = n - 1; t >= 0; --t) task(ctx, t, t % 4);
}
TEST(X86Kernels, WbcastFormSharedXInAnyOrder) {
  DietcodeCpuRuntime reversed{};
  reversed.threads = 4;
  reversed.parallel_for = &reversed_parallel_for;
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime();
  using P = Params<4, 16, 24, 8, 32, 0, 0, 0, 0, 2, dc_x86::Isa::kAvx2, 0, 0, 1>;
  check_wbcast_form(rows_of_k_kernels<WbcastForm, P>, P::MR, P::NR, P::KC, P::MC, P::NC, &serial,
                    &reversed);
}

// SHARE_B in the BLIS form (SHARE_W of its space): W packed once for every worker, blocks of
// MC x NC handed out, the last ones in pieces along C's rows. Every op kind: dense and conv2d
// share their one B; batch_matmul shares each element's in turn on 3 workers and takes runs
// of elements on 2. A packed per block and read in place (conv2d's runs), both loop orders,
// an odd K block, blocks so small that every shape has many.
TEST(X86Kernels, BlisFormSharedW) {
  using I = dc_x86::Isa;
  check_params<Params<6, 16, 64, 12, 48, 0, 0, 1, 4, 3, I::kAvx2, 0, 0, 1>>(2);
  check_params<Params<4, 24, 17, 8, 24, 1, 0, 0, 0, 2, I::kAvx2, 0, 0, 1>>(3);
}
TEST(X86Kernels, BlisFormSharedWInAnyOrder) {
  DietcodeCpuRuntime reversed{};
  reversed.threads = 4;
  reversed.parallel_for = &reversed_parallel_for;
  check_params_on<Params<6, 16, 24, 12, 32, 0, 0, 1, 0, 2, dc_x86::Isa::kAvx2, 0, 0, 1>>(
      dc_x86::serial_runtime(), reversed);
}

TEST(X86Kernels, WbcastFormRefusesOpsWhoseBIsNotRowsOfK) {
  DietcodeArgs a{};
  const DietcodeCpuRuntime rt = dc_x86::serial_runtime();
  using P = Params<6, 16, 256, 72, 3072, 0, 0, 0, 0, 4>;
  EXPECT_EQ((dc_x86::run_wbcast<OpKind::kBatchMatmulNN, Epilogue::kNone, P>(&a, &rt)), 3);
  EXPECT_EQ((dc_x86::run_wbcast<OpKind::kDenseKN, Epilogue::kNone, P>(&a, &rt)), 3);
  EXPECT_EQ((dc_x86::run_wbcast<OpKind::kConv2d, Epilogue::kNone, P>(&a, &rt)), 3);
}

// Other op kinds are not the dot form's: they are refused, never computed wrongly.
TEST(X86Kernels, DotFormRefusesOpsWhoseBIsNotRowsOfK) {
  DietcodeArgs a{};
  const DietcodeCpuRuntime rt = dc_x86::serial_runtime();
  EXPECT_EQ((dc_x86::run_dot<OpKind::kBatchMatmulNN, Epilogue::kNone, dc_x86::DotParams<>>(&a, &rt)), 3);
  EXPECT_EQ((dc_x86::run_dot<OpKind::kConv2d, Epilogue::kNone, dc_x86::DotParams<>>(&a, &rt)), 3);
}

// The defaults (Params<> = 6x16, KC 256, MC 72, NC 3072, loop 0, auto split, packed A).
TEST(X86Kernels, Defaults) { check_params<Params<>>(3); }
// The thinnest tile, tiny blocks (KC smaller than K almost always), no unroll.
TEST(X86Kernels, Mr1Nr8TinyBlocks) { check_params<Params<1, 8, 16, 1, 8, 0, 0, 1, 0, 1>>(3); }
// A read in place (PACK_A 0), loop order 1, prefetch, odd unroll, NR = 3 vectors.
TEST(X86Kernels, DirectALoop1Prefetch) { check_params<Params<4, 24, 64, 8, 48, 1, 0, 0, 2, 3>>(3); }
// The tallest AVX2 tile, all threads on M.
TEST(X86Kernels, Mr14Nr8ThreadsM) { check_params<Params<14, 8, 32, 28, 16, 0, 3, 1, 8, 2>>(3); }
// NR = 4 vectors, odd KC, THREADS_M 2 of 2 threads, direct A, unroll not dividing KC.
TEST(X86Kernels, Nr32OddKc) { check_params<Params<2, 32, 17, 8, 64, 1, 2, 0, 0, 5>>(2); }
// The large-problem candidate: 6x16, big blocks, prefetch, loop 1.
TEST(X86Kernels, BigBlocksLoop1) { check_params<Params<6, 16, 384, 144, 768, 1, 1, 1, 16, 8>>(3); }

// C at every float offset within a cache line (check_c_offsets_within_a_line).
template <class P>
void check_c_offsets(int threads) {
  dc_x86::SimpleThreadPool pool(threads);
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  check_c_offsets_within_a_line(&Kernels<P>::get, Tiles{P::MR, P::NR, P::KC, P::MC, P::NC}, &serial,
                                &pooled);
}
// Parameter sets of the tests above (no new instantiations): the default 6x16, NR = 24 with A
// in place and prefetch, NR = 8 with every thread on M and prefetch.
TEST(X86Kernels, COffsetsWithinALineDefaults) { check_c_offsets<Params<>>(2); }
TEST(X86Kernels, COffsetsWithinALineNr24Prefetch) {
  check_c_offsets<Params<4, 24, 64, 8, 48, 1, 0, 0, 2, 3>>(3);
}
TEST(X86Kernels, COffsetsWithinALineNr8ThreadsM) {
  check_c_offsets<Params<14, 8, 32, 28, 16, 0, 3, 1, 8, 2>>(2);
}
// SHARE_B: a C on cache lines shares W; one off them takes the bands and their strip.
TEST(X86Kernels, COffsetsWithinALineSharedW) {
  check_c_offsets<Params<6, 16, 64, 12, 48, 0, 0, 1, 4, 3, dc_x86::Isa::kAvx2, 0, 0, 1>>(2);
}

TEST(X86Kernels, StaticDimsAgreeAndMismatchReturns2) {
  using P = Params<6, 16, 64, 12, 96, 0, 0, 1, 4, 4>;
  const DietcodeCpuRuntime rt = dc_x86::serial_runtime();
  Case c(gemm(Op::kDense, 37, 96, 130));
  EXPECT_EQ(c.run_and_check(kernel<OpKind::kDense, 5, P, 96, 130>, 5, &rt), "");
  EXPECT_NE(c.run_and_check(kernel<OpKind::kDense, 5, P, 96, 128>, 5, &rt).find("returned 2"),
            std::string::npos);
  EXPECT_NE(c.run_and_check(kernel<OpKind::kDense, 5, P, 95, 130>, 5, &rt).find("returned 2"),
            std::string::npos);
  Case cv(conv(1, 7, 7, 3, 5, 3, 3, 1, 1, 1));
  EXPECT_EQ(cv.run_and_check(kernel<OpKind::kConv2d, 3, P, 5, 27>, 3, &rt), "");
}

TEST(X86Kernels, MissingBiasReturns3) {
  const DietcodeCpuRuntime rt = dc_x86::serial_runtime();
  float x = 1, w = 1, y = 0;
  DietcodeArgs a{};
  a.a = &x, a.b = &w, a.c = &y, a.m = a.n = a.k = a.batch = 1;
  EXPECT_EQ((kernel<OpKind::kDense, 1, Params<>>(&a, &rt)), 3);
  EXPECT_EQ((kernel<OpKind::kDense, 0, Params<>>(&a, &rt)), 0);
  EXPECT_EQ(y, 1.0f);
}

// A multi-block problem with many tasks per worker, batch >= threads: one element per task
// (batch 7), and runs of two elements with a shorter last one (batch 29 = 14 x 2 + 1).
TEST(X86Kernels, BatchAtLeastThreads) {
  using P = Params<6, 16, 32, 12, 32>;
  dc_x86::SimpleThreadPool pool(3);
  const DietcodeCpuRuntime rt = pool.runtime();
  for (long batch : {7, 29})
    for (Op op : {Op::kBmmNN, Op::kBmmTT}) {
      Case c(gemm(op, 29, 45, 70, batch, 11));
      EXPECT_EQ(c.run_and_check(Kernels<P>::get(op, 5), 5, &rt), "") << "batch " << batch;
    }
  Case nt(gemm(Op::kBmmNT, 13, 9, 40, 29, 3));
  EXPECT_EQ(nt.run_and_check(rows_of_k_kernels<DotForm, dc_x86::DotParams<>>(Op::kBmmNT, 5), 5,
                             &rt),
            "");
}

// conv2d's A packing copies runs of channels, at most 256 floats each (a row of zeros stands in
// for a tap in the padding): channels past 256, K blocks that start and end inside a pixel's
// channels, taps in the padding, on both runtimes.
TEST(X86Kernels, ConvPackingOfLongChannelRuns) {
  dc_x86::SimpleThreadPool pool(2);
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  for (const Problem& p : {conv(1, 5, 6, 300, 9, 3, 3, 1, 1, 1), conv(2, 4, 4, 520, 7, 1, 2, 1, 1, 1)})
    for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
      Case a(p), b(p);
      EXPECT_EQ(a.run_and_check(Kernels<Params<6, 16, 512, 12, 32>>::get(Op::kConv2d, 3), 3, rt), "")
          << "C " << p.c << ", KC 512, threads " << rt->threads;
      EXPECT_EQ(b.run_and_check(Kernels<Params<4, 8, 383, 8, 16>>::get(Op::kConv2d, 5), 5, rt), "")
          << "C " << p.c << ", KC 383, threads " << rt->threads;
    }
}

// With no dilation along W, a tap row whose pixels are all inside the image is one run (conv1's
// 7 taps of 3 channels: 21 floats), interleaved eight k steps at a time through 8x8 transposes;
// rows at the image's edges fall back to a run per tap. Panels of 6, 12 and 14 rows (one and
// two transposes), K blocks that end inside a tap row, stride 2 and dilation 2.
TEST(X86Kernels, ConvPackingOfWholeTapRows) {
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime();
  for (const Problem& p : {conv(1, 19, 17, 3, 9, 7, 7, 2, 3, 1), conv(2, 9, 23, 5, 6, 3, 5, 1, 2, 1),
                           conv(1, 13, 15, 3, 5, 3, 7, 1, 3, 2)}) {
    Case a(p), b(p), c(p);
    EXPECT_EQ(a.run_and_check(Kernels<Params<6, 16, 64, 12, 32>>::get(Op::kConv2d, 3), 3, &serial),
              "")
        << "MR 6, R " << p.r << " S " << p.s;
    EXPECT_EQ(b.run_and_check(Kernels<Params<12, 8, 37, 24, 16>>::get(Op::kConv2d, 5), 5, &serial),
              "")
        << "MR 12, R " << p.r << " S " << p.s;
    EXPECT_EQ(c.run_and_check(Kernels<Params<14, 8, 100, 28, 16>>::get(Op::kConv2d, 3), 3, &serial),
              "")
        << "MR 14, R " << p.r << " S " << p.s;
  }
}

// conv2d's direct form (PACK_A = 0) reads the input in place through a table of runs: the
// geometries of the two packing tests above (channel runs past 256, whole tap rows, padding,
// stride, dilation), K blocks that start and end inside a run, both loop orders, a prefetch
// distance, MC blocks of several panels, on both runtimes.
TEST(X86Kernels, ConvDirectFormReadsTheInputInPlace) {
  dc_x86::SimpleThreadPool pool(2);
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  for (const Problem& p : {conv(1, 5, 6, 300, 9, 3, 3, 1, 1, 1), conv(2, 4, 4, 520, 7, 1, 2, 1, 1, 1),
                           conv(1, 19, 17, 3, 9, 7, 7, 2, 3, 1), conv(2, 9, 23, 5, 6, 3, 5, 1, 2, 1),
                           conv(1, 13, 15, 3, 5, 3, 7, 1, 3, 2), conv(3, 8, 7, 16, 40, 3, 3, 1, 1, 1)})
    for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
      Case a(p), b(p), c(p);
      EXPECT_EQ(a.run_and_check(Kernels<Params<6, 16, 512, 12, 32, 0, 0, 0>>::get(Op::kConv2d, 3), 3, rt),
                "")
          << "MR 6, C " << p.c << ", threads " << rt->threads;
      EXPECT_EQ(b.run_and_check(Kernels<Params<12, 8, 37, 24, 16, 1, 0, 0, 4, 3>>::get(Op::kConv2d, 5), 5,
                                rt),
                "")
          << "MR 12, C " << p.c << ", threads " << rt->threads;
      EXPECT_EQ(c.run_and_check(Kernels<Params<5, 8, 100, 15, 24, 0, 2, 0, 0, 1>>::get(Op::kConv2d, 3), 3,
                                rt),
                "")
          << "MR 5, C " << p.c << ", threads " << rt->threads;
    }
}

// Constant weights: B packed once by prepack, then read by run_prepacked, which packs no B.
// The panels sit in a buffer of exactly the floats prepack asks for, followed by NaN
// canaries, so a read past them would poison C; a second call reuses the same panels.
template <OpKind OP, int EPI, class P>
int prepacked_kernel(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  const long long floats = dc_x86::prepack<OP, P>(a, nullptr);
  if (floats < 0) return int(-floats);
  constexpr long kCanaries = 64;
  std::vector<float> storage(size_t(floats + kCanaries + 16), std::nanf(""));
  float* panels = storage.data();
  while (reinterpret_cast<uintptr_t>(panels) % 64) ++panels;
  std::fill(panels, panels + floats, std::nanf(""));  // every float is written by prepack
  if (dc_x86::prepack<OP, P>(a, panels) != floats) return 9;
  int code = dc_x86::run_prepacked<OP, Epilogue(EPI), P>(a, rt, panels);
  if (code == 0) code = dc_x86::run_prepacked<OP, Epilogue(EPI), P>(a, rt, panels);
  return code;
}

template <class P>
void check_prepacked(int threads) {
  const Tiles tiles{P::MR, P::NR, P::KC, P::MC, P::NC};
  dc_x86::SimpleThreadPool pool(threads);
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  int failures = 0;
  for (Op op : {Op::kDense, Op::kDenseKN, Op::kConv2d}) {
    const std::vector<Problem> shapes = op == Op::kConv2d ? conv_shapes() : gemm_shapes(op, tiles);
    for (const Problem& p : shapes)
      for (int epi : {op == Op::kConv2d ? 3 : 0, 5})
        for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
          DietcodeCpuKernelFn fn =
              op == Op::kDense ? (epi == 5 ? prepacked_kernel<OpKind::kDense, 5, P>
                                           : prepacked_kernel<OpKind::kDense, 0, P>)
              : op == Op::kDenseKN ? (epi == 5 ? prepacked_kernel<OpKind::kDenseKN, 5, P>
                                               : prepacked_kernel<OpKind::kDenseKN, 0, P>)
                                   : (epi == 5 ? prepacked_kernel<OpKind::kConv2d, 5, P>
                                               : prepacked_kernel<OpKind::kConv2d, 3, P>);
          Case c(p);
          const std::string err = c.run_and_check(fn, epi, rt);
          EXPECT_EQ(err, "") << "prepacked B, threads " << rt->threads;
          if (!err.empty() && ++failures > 5) return;
        }
  }
}

// Loop order 0 with one MC block (where gemm_region otherwise packs each B panel right before
// its use), loop order 1, A in place and packed, K blocks that do not divide K, NC blocks.
TEST(X86Kernels, PrepackedBDefaults) { check_prepacked<Params<>>(3); }
TEST(X86Kernels, PrepackedBDirectALoop1) { check_prepacked<Params<4, 24, 64, 8, 48, 1, 0, 0, 2, 3>>(2); }
TEST(X86Kernels, PrepackedBOddKcSmallNc) { check_prepacked<Params<2, 32, 17, 8, 64, 1, 2, 0, 0, 5>>(2); }
TEST(X86Kernels, PrepackedBTinyBlocks) { check_prepacked<Params<3, 8, 5, 3, 16, 0, 0, 1, 0, 1>>(3); }
// SHARE_B with weights packed ahead: no packing phase, the blocks read the caller's panels.
TEST(X86Kernels, PrepackedBSharedW) {
  check_prepacked<Params<6, 16, 64, 12, 48, 0, 0, 1, 4, 3, dc_x86::Isa::kAvx2, 0, 0, 1>>(3);
}

TEST(X86Kernels, PrepackedBSizeIsWholePanelsTimesK) {
  using P = Params<6, 16, 100>;
  Case c(gemm(Op::kDense, 5, 33, 250));
  EXPECT_EQ((dc_x86::prepack<OpKind::kDense, P>(&c.args(), nullptr)), 48LL * 250);
  EXPECT_EQ((dc_x86::prepack<OpKind::kDense, P, 34>(&c.args(), nullptr)), -2LL);
}

// With at least as many batch elements as workers, the tasks are runs of consecutive whole
// elements, a quarter of a worker's share each, covering every element once.
TEST(X86Kernels, TaskGridCoversEveryBatchElementOnceInRuns) {
  for (int workers = 1; workers <= 5; ++workers)
    for (long batch = 1; batch <= 100; ++batch) {
      const dc_x86::TaskGrid g = dc_x86::task_grid(batch, workers, 0, 40, 40, 8, 4, 16, 64);
      std::vector<int> seen(size_t(batch), 0);
      for (long t = 0; t < g.tasks; ++t) {
        const dc_x86::TaskRegion r = dc_x86::task_region(t, g, batch, 40, 40, 4, 16);
        ASSERT_LT(r.batch0, r.batch1);
        for (long e = r.batch0; e < r.batch1; ++e) ++seen[size_t(e)];
        if (batch >= workers) {
          EXPECT_EQ(r.m1 - r.m0, 40);  // whole elements
          EXPECT_EQ(r.n1 - r.n0, 40);
        }
      }
      for (long e = 0; e < batch; ++e)
        ASSERT_EQ(seen[size_t(e)], batch >= workers ? 1 : g.tm * g.tn)
            << "batch " << batch << ", workers " << workers << ", element " << e;
      if (batch >= 2 * workers * dc_x86::kRunsPerWorker) EXPECT_GT(g.run, 1);
      if (batch >= workers) EXPECT_GE(g.tasks, workers);
    }
}

// SHARE_B's schedule: every element of the core's output in exactly one task; blocks of MC x NC
// handed out whole but for the last `workers`, which go out in kTailPieces pieces cut on whole
// units along C's rows: the core's rows (the BLIS form) or its columns (C^T, the W-broadcast
// form), so that two workers never write one row of C.
TEST(X86Kernels, SharedBlocksCoverCOnceAndSplitTheLastBlocksAlongCsRows) {
  constexpr int kPieces = dc_x86::kTailPieces;
  const long mc = 24, nc = 48;
  for (bool split_rows : {false, true})
    for (int workers = 1; workers <= 5; ++workers)
      for (long rows : {1L, 7L, 96L, 768L})
        for (long cols : {1L, 24L, 100L, 768L}) {
          const long unit = split_rows ? 6 : 8;
          const dc_x86::SharedBlockGrid g =
              dc_x86::shared_block_grid(rows, cols, mc, nc, workers, unit, split_rows);
          const long blocks = dc_x86::ceil_div(rows, mc) * dc_x86::ceil_div(cols, nc);
          const long split = workers > 1 ? std::min<long>(blocks, workers) : 0;
          ASSERT_EQ(g.tasks, blocks - split + split * kPieces);
          std::vector<int> seen(size_t(rows * cols), 0);
          for (long t = 0; t < g.tasks; ++t) {
            long m0, m1, n0, n1;
            dc_x86::shared_block(g, t, &m0, &m1, &n0, &n1);
            ASSERT_TRUE(0 <= m0 && m0 <= m1 && m1 <= rows && 0 <= n0 && n0 <= n1 && n1 <= cols);
            if (t < blocks - split) {
              EXPECT_EQ(m0 % mc, 0);
              EXPECT_EQ(n0 % nc, 0);
              EXPECT_EQ(m1 - m0, std::min(mc, rows - m0));
              EXPECT_EQ(n1 - n0, std::min(nc, cols - n0));
            } else if (split_rows) {
              EXPECT_EQ(n0 % nc, 0);
              EXPECT_EQ(m0 % unit, 0) << "a piece starts on a unit";
              EXPECT_LE(m1 - m0, dc_x86::round_up(dc_x86::ceil_div(mc, kPieces), unit));
            } else {
              EXPECT_EQ(m0 % mc, 0);
              EXPECT_EQ(n0 % unit, 0) << "a piece starts on a unit";
              EXPECT_LE(n1 - n0, dc_x86::round_up(dc_x86::ceil_div(nc, kPieces), unit));
            }
            for (long i = m0; i < m1; ++i)
              for (long j = n0; j < n1; ++j) ++seen[size_t(i * cols + j)];
          }
          for (size_t e = 0; e < seen.size(); ++e)
            ASSERT_EQ(seen[e], 1) << rows << " x " << cols << ", workers " << workers
                                  << ", split_rows " << split_rows << ", element " << e;
        }
}

// A pool that counts the parallel_for calls it is asked for, to see which kernels wake it.
struct CountingPool {
  explicit CountingPool(int threads) : pool(threads) {}
  DietcodeCpuRuntime runtime() {
    DietcodeCpuRuntime rt = pool.runtime();
    rt.pool = this;
    rt.parallel_for = [](void* self, int n, DietcodeCpuTask task, void* ctx) {
      auto* me = static_cast<CountingPool*>(self);
      ++me->calls;
      me->pool.runtime().parallel_for(me->pool.runtime().pool, n, task, ctx);
    };
    return rt;
  }
  dc_x86::SimpleThreadPool pool;
  int calls = 0;
};

// WORKERS = 1: every form computes on the caller alone and never calls parallel_for, whatever
// the runtime's threads; WORKERS = 0 hands the same problems to the pool.
TEST(X86Kernels, OneWorkerRunsOnTheCallerAlone) {
  using Blis1 = Params<6, 16, 32, 12, 32, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx2, 1>;
  using Blis0 = Params<6, 16, 32, 12, 32, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx2, 0>;
  using Wbcast1 = Params<6, 16, 32, 12, 32, 0, 0, 0, 0, 4, dc_x86::Isa::kAvx2, 1>;
  using Dot1 = dc_x86::DotParams<4, 2, 256, 0, 2, dc_x86::Isa::kAvx2, 1>;
  for (int workers : {1, 0}) {
    CountingPool counting(3);
    const DietcodeCpuRuntime rt = counting.runtime();
    std::vector<std::pair<const char*, DietcodeCpuKernelFn>> kernels;
    if (workers == 1) {
      kernels = {{"BLIS dense", Kernels<Blis1>::get(Op::kDense, 5)},
                 {"BLIS batch_matmul NN", Kernels<Blis1>::get(Op::kBmmNN, 5)},
                 {"BLIS conv2d", Kernels<Blis1>::get(Op::kConv2d, 5)},
                 {"W-broadcast dense", rows_of_k_kernels<WbcastForm, Wbcast1>(Op::kDense, 5)},
                 {"dot dense", rows_of_k_kernels<DotForm, Dot1>(Op::kDense, 5)}};
    } else {
      kernels = {{"BLIS dense", Kernels<Blis0>::get(Op::kDense, 5)},
                 {"BLIS batch_matmul NN", Kernels<Blis0>::get(Op::kBmmNN, 5)}};
    }
    for (const auto& [name, fn] : kernels) {
      const bool conv = std::string(name).find("conv") != std::string::npos;
      const bool bmm = std::string(name).find("batch") != std::string::npos;
      Case c(conv ? conv_shapes()[1] : bmm ? gemm(Op::kBmmNN, 29, 45, 70, 7, 11)
                                           : gemm(Op::kDense, 61, 75, 90, 1, 0));
      counting.calls = 0;
      EXPECT_EQ(c.run_and_check(fn, 5, &rt), "") << name << ", WORKERS " << workers;
      if (workers == 1)
        EXPECT_EQ(counting.calls, 0) << name << " woke the pool with WORKERS = 1";
      else
        EXPECT_GT(counting.calls, 0) << name << " ran alone with WORKERS = 0";
    }
  }
}

// SHARE_B wakes the pool twice per batch element shared, to pack B together and then for the
// blocks; bands wake it once. batch_matmul with as many elements as workers takes whole
// elements instead, and so does a C whose rows start on cache lines alike but not at its
// first column, where the bands lay their tiles from the first aligned column.
TEST(X86Kernels, SharedWPacksTogetherThenHandsOutBlocks) {
  using Shared = Params<6, 16, 32, 12, 32, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx2, 0, 0, 1>;
  using Banded = Params<6, 16, 32, 12, 32, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx2, 0, 0, 0>;
  CountingPool counting(3);
  const DietcodeCpuRuntime rt = counting.runtime();
  const std::vector<std::tuple<const char*, DietcodeCpuKernelFn, Problem, int>> runs = {
      {"shared dense", Kernels<Shared>::get(Op::kDense, 5), gemm(Op::kDense, 61, 75, 90, 1, 0), 2},
      {"banded dense", Kernels<Banded>::get(Op::kDense, 5), gemm(Op::kDense, 61, 75, 90, 1, 0), 1},
      {"shared batch_matmul, 2 elements", Kernels<Shared>::get(Op::kBmmNN, 5),
       gemm(Op::kBmmNN, 29, 45, 70, 2, 11), 4},
      {"shared batch_matmul, 3 elements", Kernels<Shared>::get(Op::kBmmNN, 5),
       gemm(Op::kBmmNN, 29, 45, 70, 3, 11), 1},
  };
  for (const auto& [name, fn, problem, calls] : runs) {
    Case c(problem);
    counting.calls = 0;
    EXPECT_EQ(c.run_and_check(fn, 5, &rt), "") << name;
    EXPECT_EQ(counting.calls, calls) << name;
  }
  alignas(64) static float lines[64 * 4];
  using dc_x86::BMatrixNK;
  EXPECT_TRUE((dc_x86::detail::shares_b<Shared, false, BMatrixNK>(&rt, 3, 1, lines, 64)));
  EXPECT_FALSE((dc_x86::detail::shares_b<Shared, false, BMatrixNK>(&rt, 3, 1, lines + 4, 64)));
  EXPECT_TRUE((dc_x86::detail::shares_b<Shared, false, BMatrixNK>(&rt, 3, 1, lines + 4, 60)));
  EXPECT_TRUE((dc_x86::detail::shares_b<Shared, true, BMatrixNK>(&rt, 3, 1, lines + 4, 64)));
  EXPECT_FALSE((dc_x86::detail::shares_b<Banded, false, BMatrixNK>(&rt, 3, 1, lines, 64)));
  EXPECT_FALSE((dc_x86::detail::shares_b<Shared, false, BMatrixNK>(&rt, 1, 1, lines, 64)));
}

// GELU's exponential: 2^t within 2e-7 relative over the whole clamped range, and clamped
// outside it (no infinity, no zero).
TEST(X86Kernels, Exp2WithinTwoTenMillionths) {
  for (double t = -125; t < 126; t += 1.0 / 1024) {  // in[l] stays below 126
    alignas(32) float in[8], out[8];
    for (int l = 0; l < 8; ++l) in[l] = float(t + l / 8192.0);
    _mm256_store_ps(out, dc_x86::Avx2::exp2(_mm256_load_ps(in)));
    for (int l = 0; l < 8; ++l) {
      const double want = std::exp2(double(in[l]));
      ASSERT_LE(std::fabs(out[l] - want), 2e-7 * want) << "t = " << in[l];
    }
  }
  alignas(32) const float far[8] = {-1e30f, -1000, -126.5f, -125, 126, 127.5f, 1000, 1e30f};
  alignas(32) float out[8];
  _mm256_store_ps(out, dc_x86::Avx2::exp2(_mm256_load_ps(far)));
  for (int l = 0; l < 4; ++l) EXPECT_NEAR(out[l], std::exp2(-125.0), 1e-7 * std::exp2(-125.0));
  for (int l = 4; l < 8; ++l) EXPECT_NEAR(out[l], std::exp2(126.0), 1e-7 * std::exp2(126.0));
}

TEST(X86Kernels, GeluMatchesScalarTanhForm) {
  double worst = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = float(i) * 1e-4f * (i % 7 == 0 ? 3.0f : 1.0f);  // [-60, 60], dense near 0
    alignas(32) float in[8], out[8];
    for (int l = 0; l < 8; ++l) in[l] = x * (1.0f + 1e-3f * float(l));
    _mm256_store_ps(out, dc_x86::gelu<dc_x86::Avx2>(_mm256_load_ps(in)));
    for (int l = 0; l < 8; ++l) {
      const double want = gelu_ref(in[l]);
      // Relative 1e-6 down to x = -2.5 (GELU ~ -1.5e-2). Below, GELU(x) ~ x e^z with z ~ -x^3/12
      // and a float z carries a relative error of 2^-24 |z| into the result whatever the
      // implementation, so allow 1e-6 + 2^-22 |z|; and absolute 1e-30 where GELU leaves the
      // float range (x < -9.3).
      const double z = 1.5957691216057308 * (in[l] + 0.044715 * double(in[l]) * in[l] * in[l]);
      const double rtol = in[l] >= -2.5 ? 1e-6 : 1e-6 + std::fabs(z) * 2.4e-7;
      const double err = std::fabs(out[l] - want) / (std::fabs(want) + 1e-24);
      if (in[l] >= -2.5) worst = std::max(worst, err);
      ASSERT_LE(std::fabs(out[l] - want), rtol * std::fabs(want) + 1e-30)
          << "x = " << in[l] << " got " << out[l] << " want " << want;
      if (std::fabs(in[l]) <= 4) {  // the textbook formula agrees where it has no cancellation
        const double tanh_form =
            0.5 * in[l] * (1 + std::tanh(0.7978845608028654 * (in[l] + 0.044715 * std::pow(in[l], 3))));
        ASSERT_LE(std::fabs(out[l] - tanh_form), 1e-6 * std::fabs(tanh_form) + 1e-7) << in[l];
      }
    }
  }
  RecordProperty("worst_relative_error_x_ge_minus2_5", std::to_string(worst));
  EXPECT_LE(worst, 1e-6);
}

}  // namespace
