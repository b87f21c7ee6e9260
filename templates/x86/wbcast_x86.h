// wbcast_x86.h: the W-broadcast form of the x86 fp32 GEMM, for B stored [N][K] (dense's W,
// batch_matmul with transpose_b) with A stored [M][K]. It computes C^T = B . A^T on the BLIS
// core of gemm_x86.h with the operands' roles swapped: B's rows are the broadcast operand, read
// in place (PACK_A = 0 of the core), and A is packed into NR-row panels, so the vectors run
// along M and the C tile is stored transposed (gemm_region's CT).
//
// Why a third form. The BLIS form packs W, an 8x8 transpose of every weight on every call; at
// M = 128 the cost model puts that at about a fifth of the time, and nothing overlaps it with
// the FMAs. The dot form (dot_x86.h) reads W in place but pays a horizontal sum per output and
// K block. Here W streams from memory once per row band of A while the FMAs run, only A (M x K,
// small where this form pays) is packed, and the accumulators are plain vectors of C^T. The
// transposed store costs one scalar move per output per K block.
//
// Tunables: dc_x86::Params, read in C^T's frame: MR rows of W (columns of C) broadcast per k,
// NR rows of A (a multiple of the vector width) per vector row of the tile, MC a block of W's
// rows, NC a block of A's rows, THREADS_M the thread bands over W's rows (N). PACK_A must be 0:
// packing W is what this form avoids. PREFETCH > 0 also prefetches the MR streams of W.
//
// SHARE_X (Params::SHARE_B) = 1, on several workers with fewer batch elements than workers:
// X is packed once, by every worker a few panels at a time, into panels they all read; then
// the blocks of MC rows of W by NC rows of X are handed out as the workers ask for them, with
// nothing packed per block, the last few in pieces (shared_b_x86.h). With SHARE_X = 0
// each of the THREADS_M x tn thread bands packs its own X (all of it, for bands over W's
// rows), and the band a worker owns is what it computes. On a 2-vCPU guest the two workers of
// such a split finished 4-37% of the call apart (a woken worker starts 40-270 us late, and a
// vCPU's speed drifts with its neighbours); with the blocks handed out, 0-6%, and with the
// last ones in pieces 0-3%. Kernels ran up to a fifth faster at M = 256 and level at M = 768,
// and BERT's dense layers 1-3% faster over all (docs/results/cpu/README.md, AO); the pieces
// took a few percent more off kernels with few blocks (AP).
// Include ops_x86.h, not this file: it includes this one after the op kinds and the argument
// reading (detail::rows_of_k_problem) used here.
#pragma once

#include "gemm_x86.h"

namespace dc_x86 {

// The W-broadcast form for ops whose A is [M][K] and B is [N][K]: dense, batch_matmul NT.
// Same contract and return codes as run() in ops_x86.h; other op kinds return 3.
template <OpKind OP, Epilogue EPI, class P = Params<>, long STATIC_N = 0, long STATIC_K = 0>
int run_wbcast(const DietcodeArgs* args, const DietcodeCpuRuntime* rt) {
  using I = typename IsaTraits<P::ISA>::type;
  static_assert(CheckParams<I, P>::ok, "");
  static_assert(P::PACK_A == 0, "the W-broadcast form reads W in place (PACK_A = 0)");
  detail::RowsOfKProblem p;
  if (const int rc = detail::rows_of_k_problem<OP, EPI, STATIC_N, STATIC_K>(args, &p)) return rc;
  // C^T = W . X^T: W ([N][K], rows in place) is the core's A, X ([M][K]) its packed B.
  const AMatrixMK w{p.b, p.K};
  const BMatrixNK x{p.a, p.K};
  return detail::launch<I, P, EPI, /*CT=*/true>(rt, w, x, p.bias, p.c, p.batch, p.N, p.M, p.K,
                                                p.stride_b, p.stride_a, p.stride_c);
}

}  // namespace dc_x86
