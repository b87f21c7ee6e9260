// shared_b_x86.h: Params::SHARE_B, the workers of one call sharing the core's packed B instead
// of each packing its own for a band of C. Used by ops_x86.h's launch for the BLIS form (B is
// W: SHARE_W in its space) and the W-broadcast form (B is X: SHARE_X), through the same core.
//
// Two phases per batch element, each one parallel_for:
//   1. the workers pack B's NR-column panels together, a few panels a task, into the layout
//      constant weights use (gemm_x86.h's prepack_b_columns; BPrepacked reads it). Weights
//      packed ahead of time (run_prepacked) skip this phase.
//   2. blocks of MC rows by NC columns of the core's output are handed out as the workers free
//      up, the last few in pieces (thread_split_x86.h, shared_block_grid), each computed from
//      the shared panels with A packed per block (PACK_A) or read in place, as in a band.
// So B is packed once where bands packed it once per row band, and no worker waits long for
// another: on a 2-vCPU guest a woken worker starts 40-270 us late, and with one band each the
// two finished 4-37% of the call apart (docs/results/cpu/README.md, AO and AP).
//
// Not for a C whose rows do not start on cache lines where the BLIS form would lay its tiles
// from the first aligned column (gemm_region): shared panels lie on the grid from column 0,
// so such a call takes the bands instead (launch checks shares_b below).
#pragma once

#include "gemm_x86.h"

namespace dc_x86 {

namespace detail {

template <class I, class P, Epilogue E, bool CT, class AOp, class BOp>
struct SharedBJob {
  AOp a;
  BOp b;
  const float* bias;
  float* c;
  long M, N, K, ldc;
  const float* panels;  // B's panels: packed by pack_task, or packed ahead of time
  float* packing;       // where pack_task writes them (null: B came packed)
  long npad;            // N rounded up to whole panels
  long panels_per_task;
  SharedBlockGrid grid;
  int error = 0;

  static void pack_task(void* ctx, int t, int /*worker*/) {
    const SharedBJob& j = *static_cast<const SharedBJob*>(ctx);
    if constexpr (!kIsPrepacked<BOp>) {
      const long j_begin = t * j.panels_per_task * P::NR;
      prepack_b_columns<P>(j.b, j.N, j.K, j_begin,
                           std::min(j.N, j_begin + j.panels_per_task * P::NR), j.packing);
    }
  }
  static void block_task(void* ctx, int t, int /*worker*/) {
    SharedBJob& j = *static_cast<SharedBJob*>(ctx);
    long m0, m1, n0, n1;
    shared_block(j.grid, t, &m0, &m1, &n0, &n1);
    const BPrepacked bp{j.panels, j.npad};
    if (gemm_region_from<I, P, E, CT>(j.a, bp, j.bias, j.c, j.ldc, j.K, m0, m1, n0, n1))
      __atomic_store_n(&j.error, 1, __ATOMIC_RELAXED);
  }
};

// Whether a call of P on `workers` workers shares B: SHARE_B, several workers with a pool,
// fewer batch elements than workers (else each worker takes whole elements), and a C the
// shared panels' grid suits (see above).
template <class P, bool CT, class BOp>
bool shares_b(const DietcodeCpuRuntime* rt, int workers, long batch, const float* c, long ldc) {
  if (!P::SHARE_B || workers < 2 || !rt || !rt->parallel_for || batch >= workers) return false;
  if constexpr (!CT && !kIsPrepacked<BOp>) return columns_to_line_alignment(c, ldc) == 0;
  return true;
}

template <class I, class P, Epilogue E, bool CT, class AOp, class BOp>
int run_shared_b(const DietcodeCpuRuntime* rt, int workers, const AOp& a, const BOp& b,
                 const float* bias, float* c, long batch, long M, long N, long K, long stride_a,
                 long stride_b, long stride_c) {
  const long npad = round_up(N, P::NR), n_panels = npad / P::NR;
  float* packing = nullptr;
  if constexpr (!kIsPrepacked<BOp>) {
    packing = shared_scratch().get(size_t(npad * std::max<long>(K, 1)) * sizeof(float));
    if (!packing) return 1;
  }
  // A quarter of a worker's share of the panels per task, so that one woken late finds work.
  const long per = std::max<long>(1, n_panels / (long(workers) * kRunsPerWorker));
  const long pack_tasks = ceil_div(n_panels, per);
  // Pieces along C's rows: the core's rows (MR) in the BLIS form, its columns (NR) for C^T.
  const SharedBlockGrid grid =
      shared_block_grid(M, N, P::MC, P::NC, workers, CT ? P::NR : P::MR, /*split_rows=*/!CT);
  if (pack_tasks > 0x7fffffff || grid.tasks > 0x7fffffff) return 3;
  using Job = SharedBJob<I, P, E, CT, AOp, BOp>;
  for (long e = 0; e < batch; ++e) {
    Job job{a, b, bias, c + e * stride_c, M, N, K, CT ? M : N, nullptr, packing, npad, per, grid};
    job.a.p += e * stride_a;
    job.b.p += e * stride_b;
    if constexpr (kIsPrepacked<BOp>) {
      job.panels = job.b.p;
    } else {
      job.panels = packing;
      if (pack_tasks > 1)
        rt->parallel_for(rt->pool, int(pack_tasks), &Job::pack_task, &job);
      else
        Job::pack_task(&job, 0, 0);
    }
    if (grid.tasks > 1)
      rt->parallel_for(rt->pool, int(grid.tasks), &Job::block_task, &job);
    else
      Job::block_task(&job, 0, 0);
    if (job.error) return job.error;
  }
  return 0;
}

}  // namespace detail

}  // namespace dc_x86
