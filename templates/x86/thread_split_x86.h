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

// SHARE_X's blocks (wbcast_x86.h): C^T's `rows` (rows of W) by `cols` (rows of X) cut into blocks
// of mc x nc, handed out in X-major order as workers free up. The last `workers` blocks go out
// in kTailPieces pieces each, cut along X's rows on whole NR panels. Why: with whole blocks
// the workers finish up to a block apart, since the woken one starts tens of microseconds
// late and a vCPU's speed drifts; at BERT's proj (N = 768, MC 168, NC 384) a block is a tenth
// of the call. A piece reads the block's rows of W as the whole block does (its loops stream
// them once per panel of X either way), and pieces along X write disjoint rows of C, so no
// cache line of C is written by two workers at once.
constexpr int kTailPieces = 4;
struct SharedBlockGrid {
  long rows = 0, cols = 0, mc = 1, nc = 1, nr = 1;
  long row_blocks = 0, blocks = 0;
  long whole = 0;  // blocks handed out whole; the rest in kTailPieces pieces
  long tasks = 0;
};
inline SharedBlockGrid shared_block_grid(long rows, long cols, long mc, long nc, long nr,
                                         int workers) {
  SharedBlockGrid g;
  g.rows = rows, g.cols = cols, g.mc = mc, g.nc = nc, g.nr = nr;
  g.row_blocks = ceil_div(rows, mc);
  g.blocks = g.row_blocks * ceil_div(cols, nc);
  g.whole = workers > 1 ? std::max<long>(0, g.blocks - workers) : g.blocks;
  g.tasks = g.whole + (g.blocks - g.whole) * kTailPieces;
  return g;
}
// Task t's rectangle of C^T: rows [m0, m1) of W by rows [n0, n1) of X (empty for a piece past
// the edge of a narrow last block).
inline void shared_block(const SharedBlockGrid& g, long t, long* m0, long* m1, long* n0, long* n1) {
  const long block = t < g.whole ? t : g.whole + (t - g.whole) / kTailPieces;
  *m0 = block % g.row_blocks * g.mc;
  *m1 = std::min(g.rows, *m0 + g.mc);
  const long c0 = block / g.row_blocks * g.nc, c1 = std::min(g.cols, c0 + g.nc);
  if (t < g.whole) {
    *n0 = c0, *n1 = c1;
  } else {
    band(c1 - c0, kTailPieces, int((t - g.whole) % kTailPieces), g.nr, n0, n1);
    *n0 += c0, *n1 += c0;
  }
}

}  // namespace dc_x86
