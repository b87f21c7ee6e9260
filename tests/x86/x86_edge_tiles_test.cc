// Edge tiles of the x86 BLIS core (templates/x86/gemm_x86.h, EdgeParams): a panel narrower
// than NR runs the narrowest whole-vector tile that covers it, reading the panel at NR's
// stride. Every edge width from 1 to NR - 1 of 24- and 32-wide tiles, in the BLIS form (the
// edge along N) and the W-broadcast form (along M), both loop orders, the fused packing of
// small M, two K blocks, and the tiles of fewer than 8 accumulators that take a second set
// (register_tile_x86.h, accumulate), against the double reference with canaries around C.
#include <gtest/gtest.h>

#include "x86/ops_x86.h"
#include "x86/serial_runtime.h"
#include "x86_form_kernels.h"
#include "x86_kernel_harness.h"

namespace {

using namespace dc_x86_test;
using dc_x86::Epilogue;
using dc_x86::OpKind;
using dc_x86::Params;

template <class P, int EPI>
int blis_dense(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OpKind::kDense, Epilogue(EPI), P>(a, rt);
}
template <class P, int EPI>
int wbcast_dense(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run_wbcast<OpKind::kDense, Epilogue(EPI), P>(a, rt);
}

// Dense at every edge width e in [1, NR): N = 2 NR + e (BLIS) or M = 2 NR + e (W-broadcast),
// the other side spanning a partial MR tile, K two blocks and a tail. No epilogue and
// bias + GELU (the edge tile's store applies it to whole and partial vectors alike); serial and
// on a pool of 2, whose bands each end in their own edge.
template <class P, bool WBCAST>
void check_every_edge_width() {
  dc_x86::SimpleThreadPool pool{2};
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  const long K = 2 * P::KC + 3;
  int failures = 0;
  for (int e = 1; e < P::NR; ++e) {
    const long edge_side = 2L * P::NR + e, other_side = 2L * P::MR + 1;
    Case c(WBCAST ? gemm(Op::kDense, edge_side, other_side, K)
                  : gemm(Op::kDense, other_side, edge_side, K));
    for (int epi : {0, 5}) {
      DietcodeCpuKernelFn fn;
      if constexpr (WBCAST)
        fn = epi ? wbcast_dense<P, 5> : wbcast_dense<P, 0>;
      else
        fn = epi ? blis_dense<P, 5> : blis_dense<P, 0>;
      for (const DietcodeCpuRuntime* rt : {&serial, &pooled}) {
        const std::string err = c.run_and_check(fn, epi, rt);
        EXPECT_EQ(err, "") << "edge of " << e << " columns, threads " << rt->threads;
        if (!err.empty() && ++failures > 5) return;
      }
    }
  }
}

// BLIS form: loop order 0 with M within one MC block (B packed panel by panel, fused) and
// loop order 1; A packed and read in place.
TEST(X86EdgeTiles, BlisNr24EveryWidthFusedPacking) {
  check_every_edge_width<Params<4, 24, 32, 96, 3072, 0, 0, 1, 8, 4>, false>();
}
TEST(X86EdgeTiles, BlisNr24EveryWidthLoop1DirectA) {
  check_every_edge_width<Params<4, 24, 32, 8, 48, 1, 0, 0, 0, 3>, false>();
}
TEST(X86EdgeTiles, BlisNr32EveryWidthSmallNc) {
  check_every_edge_width<Params<2, 32, 17, 8, 64, 0, 2, 1, 4, 2>, false>();
}
// W-broadcast form: the vectors run along M, so the edge is a band of X's rows, stored
// transposed; the 4 x 24 tile with NC blocks of 48 rows puts an edge at every block's end.
TEST(X86EdgeTiles, WbcastNr24EveryWidth) {
  check_every_edge_width<Params<4, 24, 32, 192, 48, 0, 0, 0, 16, 4>, true>();
}
TEST(X86EdgeTiles, WbcastNr24EveryWidthLoop1SplitW) {
  check_every_edge_width<Params<4, 24, 32, 8, 96, 1, 2, 0, 0, 8>, true>();
}
TEST(X86EdgeTiles, WbcastNr32EveryWidth) {
  check_every_edge_width<Params<2, 32, 40, 10, 64, 0, 1, 0, 8, 2>, true>();
}
// 2 x 16 holds 4 accumulators (a 2 x 8 edge, 2): both take the second set of accumulators for
// odd k steps; UNROLL 2 and an odd K leave a tail step in the first set.
TEST(X86EdgeTiles, FewAccumulatorsTakeASecondSet) {
  check_every_edge_width<Params<2, 16, 33, 8, 32, 0, 0, 1, 0, 2>, false>();
  check_every_edge_width<Params<2, 16, 33, 8, 32, 1, 0, 0, 0, 2>, true>();
}

}  // namespace
