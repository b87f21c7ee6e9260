// thread_split_x86.h: how a call's work is cut among the pack's (or the measurer's) workers,
// for every x86 form (gemm_x86.h's BLIS core, dot_x86.h, wbcast_x86.h through ops_x86.h).
// Plain C++ without intrinsics, so that the CPU cost model (src/cost/x86_analytic.cc) models
// the kernels' split with this very code instead of a copy that could drift from it.
#pragma once

#include <algorithm>

namespace dc_x86 {

constexpr long round_up(long x, long to) { return (x + to - 1) / to * to; }
constexpr long ceil_div(long x, long to) { return (x + to - 1) / to; }

// How `threads` workers tile an M x N output: tm row bands x tn column bands, tm * tn == threads.
// THREADS_M > 0 asks for the largest divisor of threads <= THREADS_M; 0 picks the split with the
// least modelled time per thread (padded FMA work plus packing, which each band repeats).
inline void split_threads(int threads, int threads_m, long M, long N, long K, int MR, int NR, int NC,
                          int* tm_out, int* tn_out) {
  int best_tm = 1;
  if (threads_m > 0) {
    for (int tm = 1; tm <= std::min(threads, threads_m); ++tm)
      if (threads % tm == 0) best_tm = tm;
  } else {
    double best = 1e300;
    for (int tm = 1; tm <= threads; ++tm) {
      if (threads % tm) continue;
      const int tn = threads / tm;
      const double mb = double(round_up(ceil_div(M, tm), MR)), nb = double(round_up(ceil_div(N, tn), NR));
      const double fma = mb * nb * double(K);
      const double pack = 16.0 * double(K) * (nb + mb * double(ceil_div(long(nb), NC)));
      if (fma + pack < best) best = fma + pack, best_tm = tm;
    }
  }
  *tm_out = best_tm;
  *tn_out = threads / best_tm;
}

// Band b of `count` bands over [0, extent) in units of `unit` (balanced, unit-aligned).
inline void band(long extent, int count, int b, long unit, long* lo, long* hi) {
  const long units = ceil_div(extent, unit);
  *lo = std::min(extent, units * b / count * unit);
  *hi = std::min(extent, units * (b + 1) / count * unit);
}

// How a parallel GEMM is cut into tasks. With fewer batch elements than workers, each
// element's C is cut into tm row bands x tn column bands of whole MR x NR tiles, a task each.
// With at least as many, a task is a run of whole consecutive elements: a worker then streams
// through adjacent memory, which the hardware prefetchers follow, instead of taking every
// other element. Runs are a quarter of a worker's share, so one woken late still finds work
// and nobody waits long for it.
struct TaskGrid {
  int tm = 1, tn = 1;
  long run = 1;    // batch elements per task
  long tasks = 0;  // every task of the call
};
constexpr int kRunsPerWorker = 4;
inline TaskGrid task_grid(long batch, int workers, int threads_m, long M, long N, long K, int MR,
                          int NR, int NC) {
  TaskGrid g;
  if (batch < workers) {
    split_threads(workers, threads_m, M, N, K, MR, NR, NC, &g.tm, &g.tn);
    g.tasks = batch * g.tm * g.tn;
  } else {
    g.run = std::max<long>(1, batch / (long(workers) * kRunsPerWorker));
    g.tasks = (batch + g.run - 1) / g.run;
  }
  return g;
}

// Task t's batch elements [batch0, batch1) and the rectangle of C it computes in each.
struct TaskRegion {
  long batch0, batch1, m0, m1, n0, n1;
};
inline TaskRegion task_region(long t, const TaskGrid& g, long batch, long M, long N, long MR,
                              long NR) {
  const int regions = g.tm * g.tn, region = int(t % regions);
  TaskRegion r;
  r.batch0 = t / regions * g.run;
  r.batch1 = std::min(batch, r.batch0 + g.run);
  band(M, g.tm, region / g.tn, MR, &r.m0, &r.m1);
  band(N, g.tn, region % g.tn, NR, &r.n0, &r.n1);
  return r;
}

// The blocks of SHARE_B (shared_b_x86.h): the core's `rows` x `cols` cut into blocks of
// mc x nc, handed out row-block-fastest as workers free up. The last `workers` blocks go out
// in kTailPieces pieces each, cut on whole `unit`s along C's rows: the core's rows for the
// BLIS form (unit MR), its columns for the W-broadcast form, which computes C^T (unit NR).
// Why: with whole blocks the workers finish up to a block apart, since the woken one starts
// tens of microseconds late and a vCPU's speed drifts; at BERT's proj (N = 768, MC 168, NC
// 384) a block is a tenth of the call. Pieces along C's rows write disjoint rows of C, so no
// cache line of C has two writers, and read the block's shared panels as the whole block does.
constexpr int kTailPieces = 4;
struct SharedBlockGrid {
  long rows = 0, cols = 0, mc = 1, nc = 1;
  long unit = 1;            // a piece's extent is whole units
  bool split_rows = false;  // pieces cut the core's rows (else its columns)
  long row_blocks = 0, blocks = 0;
  long whole = 0;  // blocks handed out whole; the rest in kTailPieces pieces
  long tasks = 0;
};
inline SharedBlockGrid shared_block_grid(long rows, long cols, long mc, long nc, int workers,
                                         long unit, bool split_rows) {
  SharedBlockGrid g;
  g.rows = rows, g.cols = cols, g.mc = mc, g.nc = nc, g.unit = unit, g.split_rows = split_rows;
  g.row_blocks = ceil_div(rows, mc);
  g.blocks = g.row_blocks * ceil_div(cols, nc);
  g.whole = workers > 1 ? std::max<long>(0, g.blocks - workers) : g.blocks;
  g.tasks = g.whole + (g.blocks - g.whole) * kTailPieces;
  return g;
}
// Task t's rectangle of the core's output: rows [m0, m1) by columns [n0, n1) (empty for a
// piece past the edge of a small last block).
inline void shared_block(const SharedBlockGrid& g, long t, long* m0, long* m1, long* n0, long* n1) {
  const long block = t < g.whole ? t : g.whole + (t - g.whole) / kTailPieces;
  *m0 = block % g.row_blocks * g.mc;
  *m1 = std::min(g.rows, *m0 + g.mc);
  *n0 = block / g.row_blocks * g.nc;
  *n1 = std::min(g.cols, *n0 + g.nc);
  if (t < g.whole) return;
  const int piece = int((t - g.whole) % kTailPieces);
  long* lo = g.split_rows ? m0 : n0;
  long* hi = g.split_rows ? m1 : n1;
  const long base = *lo;
  band(*hi - base, kTailPieces, piece, g.unit, lo, hi);
  *lo += base, *hi += base;
}

}  // namespace dc_x86
