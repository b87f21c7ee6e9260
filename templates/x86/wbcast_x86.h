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
// SHARE_X = 1, on several workers with fewer batch elements than workers: X is packed once,
// by every worker a few panels at a time, into panels they all read; then the blocks of MC
// rows of W by NC rows of X are handed out as the workers ask for them, with nothing packed
// per block, the last few in pieces (thread_split_x86.h, shared_block_grid). With SHARE_X = 0
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

namespace detail {

// SHARE_X's two phases for one batch element, each one parallel_for: pack_task packs a run
// of X's NR-row panels (every K block of them) into the shared panels, as constant weights
// are packed (gemm_x86.h's prepack_b_columns; BPrepacked reads them); block_task computes
// the block of C^T at MC rows of W by NC rows of X from W in place and those panels.
template <class I, class P, Epilogue E>
struct SharedXJob {
  AMatrixMK w;
  BMatrixNK x;
  const float* bias;
  float* c;
  long N, M, K;  // C^T is N x M: N rows of W by M rows of X
  float* panels;
  long npad;                       // M rounded up to whole panels
  long panels_per_task, pack_tasks;
  SharedBlockGrid grid;

  static void pack_task(void* ctx, int t, int /*worker*/) {
    const SharedXJob& j = *static_cast<const SharedXJob*>(ctx);
    const long j_begin = t * j.panels_per_task * P::NR;
    prepack_b_columns<P>(j.x, j.M, j.K, j_begin,
                         std::min(j.M, j_begin + j.panels_per_task * P::NR), j.panels);
  }
  // Blocks in X-major order (shared_block_grid, thread_split_x86.h): the workers' blocks at
  // any moment share X's rows, which the caches then hold once.
  static void block_task(void* ctx, int t, int /*worker*/) {
    SharedXJob& j = *static_cast<SharedXJob*>(ctx);
    long m0, m1, n0, n1;
    shared_block(j.grid, t, &m0, &m1, &n0, &n1);
    const BPrepacked xp{j.panels, j.npad};
    if (gemm_region_from<I, P, E, /*CT=*/true>(j.w, xp, j.bias, j.c, j.N, j.K, m0, m1, n0, n1))
      __atomic_store_n(&j.error, 1, __ATOMIC_RELAXED);
  }
  int error = 0;
};

template <class I, class P, Epilogue E>
int run_shared_x(const DietcodeCpuRuntime* rt, int workers, const RowsOfKProblem& p) {
  const long npad = round_up(p.M, P::NR);
  float* panels = thread_scratch().get(size_t(npad * std::max<long>(p.K, 1)) * sizeof(float));
  if (!panels) return 1;
  const long n_panels = npad / P::NR;
  // A quarter of a worker's share of the panels per task, so that one woken late finds work.
  const long per = std::max<long>(1, n_panels / (long(workers) * kRunsPerWorker));
  const SharedBlockGrid grid = shared_block_grid(p.N, p.M, P::MC, P::NC, P::NR, workers);
  if (ceil_div(n_panels, per) > 0x7fffffff || grid.tasks > 0x7fffffff) return 3;
  for (long e = 0; e < p.batch; ++e) {
    SharedXJob<I, P, E> job{AMatrixMK{p.b + e * p.stride_b, p.K},
                            BMatrixNK{p.a + e * p.stride_a, p.K},
                            p.bias,
                            p.c + e * p.stride_c,
                            p.N,
                            p.M,
                            p.K,
                            panels,
                            npad,
                            per,
                            ceil_div(n_panels, per),
                            grid};
    using Job = SharedXJob<I, P, E>;
    if (job.pack_tasks > 1)
      rt->parallel_for(rt->pool, int(job.pack_tasks), &Job::pack_task, &job);
    else
      Job::pack_task(&job, 0, 0);
    if (grid.tasks > 1)
      rt->parallel_for(rt->pool, int(grid.tasks), &Job::block_task, &job);
    else
      Job::block_task(&job, 0, 0);
    if (job.error) return job.error;
  }
  return 0;
}

}  // namespace detail

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
  const int workers = kernel_workers(rt, P::WORKERS);
  if (P::SHARE_X && workers > 1 && rt && rt->parallel_for && p.batch < workers && p.M > 0 &&
      p.N > 0)
    return detail::run_shared_x<I, P, EPI>(rt, workers, p);
  const AMatrixMK w{p.b, p.K};
  const BMatrixNK x{p.a, p.K};
  return detail::launch<I, P, EPI, /*CT=*/true>(rt, w, x, p.bias, p.c, p.batch, p.N, p.M, p.K,
                                                p.stride_b, p.stride_a, p.stride_c);
}

}  // namespace dc_x86
