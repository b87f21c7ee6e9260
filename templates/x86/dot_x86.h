// dot_x86.h: the dot-product form of the x86 fp32 GEMM, for B stored [N][K] (dense's W,
// batch_matmul with transpose_b) read in place, with A stored [M][K]. No operand is packed.
//
// Why a second form. The BLIS form (gemm_x86.h) vectorizes along N, so it must repack W's
// K-contiguous rows into NR-column panels (an 8x8 transpose per 64 floats), and for a few rows
// of A (M = 16) that repacking costs as much as the FMAs. Here each vector runs along K
// instead: a tile of MR rows of A and NR rows of B keeps MR x NR vector accumulators of
// partial dot products, fed per K step of W floats by MR + NR plain vector loads. A
// horizontal sum per accumulator at the end of each K block gives the C tile. The loads
// stream W once per row tile of A, so it suits small M. At large M the BLIS form's
// register reuse wins; the tuner measures both.
//
// Tunables (DotParams): MR, NR (rows of A and of B in the tile: MR*NR + MR + 1 <= registers),
// KC (K block; partial sums are added into C between blocks), THREADS_M and WORKERS (as in
// gemm_x86.h), UNROLL (K steps of W floats per loop iteration). Tiles past the edge re-read the last valid
// row and drop the result; a K tail shorter than W is loaded masked, so the loop never reads
// past a row.
// Include ops_x86.h, not this file: it includes this one after the op kinds and the argument
// reading (detail::rows_of_k_problem) used here.
#pragma once

#include "gemm_x86.h"

namespace dc_x86 {

template <int MR_ = 4, int NR_ = 2, int KC_ = 768, int THREADS_M_ = 1, int UNROLL_ = 2,
          Isa ISA_ = Isa::kAvx2, int WORKERS_ = 0>
struct DotParams {
  static constexpr int MR = MR_, NR = NR_, KC = KC_, THREADS_M = THREADS_M_, UNROLL = UNROLL_;
  static constexpr Isa ISA = ISA_;
  static constexpr int WORKERS = WORKERS_;  // as Params::WORKERS (gemm_x86.h)
};

template <class I, class P>
struct CheckDotParams {
  static_assert(P::MR >= 1 && P::NR >= 1, "MR, NR >= 1");
  static_assert(P::MR * P::NR + P::MR + 1 <= I::kRegs,
                "MR*NR accumulators + MR A vectors + 1 B vector must fit the vector registers");
  static_assert(P::KC >= I::W && P::KC % I::W == 0, "KC is a positive multiple of the vector width");
  static_assert(P::THREADS_M >= 0, "THREADS_M >= 0 (0: automatic)");
  static_assert(P::UNROLL >= 1 && P::UNROLL <= 8, "UNROLL in [1, 8]");
  static_assert(P::WORKERS >= 0, "WORKERS >= 0 (0: every worker of the runtime)");
  static constexpr bool ok = true;
};

// C[0:m, 0:n] (+)= A[0:m, 0:kc] . B[0:n, 0:kc]^T, m <= MR, n <= NR; both operands K-contiguous.
template <class I, class P, Epilogue E>
__attribute__((always_inline)) inline void dot_tile(long kc, const float* a, long lda,
                                                    const float* b, long ldb, float* c, long ldc,
                                                    int m, int n, bool first, bool last,
                                                    const float* bias) {
  using V = typename I::V;
  constexpr int MR = P::MR, NR = P::NR, W = I::W, U = P::UNROLL;
  V acc[MR][NR];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 32
    for (int j = 0; j < NR; ++j) acc[r][j] = I::zero();
  const float* ar[MR];
  const float* br[NR];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) ar[r] = a + long(r < m ? r : m - 1) * lda;
#pragma GCC unroll 32
  for (int j = 0; j < NR; ++j) br[j] = b + long(j < n ? j : n - 1) * ldb;

  auto step = [&](long k, int lanes) __attribute__((always_inline)) {
    V av[MR];
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r)
      av[r] = lanes == W ? I::loadu(ar[r] + k) : I::load_partial(ar[r] + k, lanes);
#pragma GCC unroll 32
    for (int j = 0; j < NR; ++j) {
      const V bv = lanes == W ? I::loadu(br[j] + k) : I::load_partial(br[j] + k, lanes);
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r) I::fma_acc(acc[r][j], av[r], bv);
    }
  };
  long k = 0;
  for (; k + U * W <= kc; k += U * W)
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) step(k + u * W, W);
  for (; k + W <= kc; k += W) step(k, W);
  if (k < kc) step(k, int(kc - k));

  // One row of sums at a time, into a vector-sized buffer, so the epilogue is the vector one.
  constexpr int NV = (NR + W - 1) / W;
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
    if (r >= m) break;
    alignas(64) float sums[NV * W] = {};
#pragma GCC unroll 32
    for (int j = 0; j < NR; ++j) sums[j] = I::hsum(acc[r][j]);
    float* cr = c + r * ldc;
    for (int v = 0; v < NV; ++v) {
      const int cols = n - v * W;
      if (cols <= 0) break;
      V x = I::loadu(sums + v * W);
      if (!first) x = I::add(x, cols >= W ? I::loadu(cr + v * W) : I::load_partial(cr + v * W, cols));
      if (last) {
        if constexpr (has_bias(E))
          x = I::add(x, cols >= W ? I::loadu(bias + v * W) : I::load_partial(bias + v * W, cols));
        x = activate<I, E>(x);
      }
      if (cols >= W) I::storeu(cr + v * W, x);
      else I::store_partial(cr + v * W, x, cols);
    }
  }
}

// One thread's rectangle [m0,m1) x [n0,n1) of C: for each NR rows of B, for each K block,
// every MR-row tile of A (B's rows stay in L1 while A's tiles stream from L2).
template <class I, class P, Epilogue E>
void dot_region(const float* A, long lda, const float* B, long ldb, const float* bias, float* C,
                long ldc, long K, long m0, long m1, long n0, long n1) {
  static_assert(CheckDotParams<I, P>::ok, "");
  if (m1 <= m0 || n1 <= n0) return;
  for (long jn = n0; jn < n1; jn += P::NR) {
    const int n = int(std::min<long>(P::NR, n1 - jn));
    long pc = 0;
    do {  // at least once: K == 0 still writes epilogue(bias)
      const long kc = std::min<long>(P::KC, K - pc);
      for (long i = m0; i < m1; i += P::MR)
        dot_tile<I, P, E>(kc, A + i * lda + pc, lda, B + jn * ldb + pc, ldb, C + i * ldc + jn, ldc,
                          int(std::min<long>(P::MR, m1 - i)), n, pc == 0, pc + kc >= K,
                          bias ? bias + jn : nullptr);
      pc += kc;
    } while (pc < K);
  }
}

namespace detail {

template <class I, class P, Epilogue E>
struct DotJob {
  const float *a, *b, *bias;
  float* c;
  long M, N, K;
  long stride_a, stride_b, stride_c;
  long batch;
  TaskGrid grid;

  static void task(void* ctx, int t, int /*worker*/) {
    DotJob& j = *static_cast<DotJob*>(ctx);
    const TaskRegion r = task_region(t, j.grid, j.batch, j.M, j.N, P::MR, P::NR);
    for (long e = r.batch0; e < r.batch1; ++e)
      dot_region<I, P, E>(j.a + e * j.stride_a, j.K, j.b + e * j.stride_b, j.K, j.bias,
                          j.c + e * j.stride_c, j.N, j.K, r.m0, r.m1, r.n0, r.n1);
  }
};

}  // namespace detail

// The dot-product form for ops whose A is [M][K] and B is [N][K]: dense, batch_matmul NT.
// Same contract and return codes as run() in ops_x86.h; other op kinds return 3.
template <OpKind OP, Epilogue EPI, class P = DotParams<>, long STATIC_N = 0, long STATIC_K = 0>
int run_dot(const DietcodeArgs* args, const DietcodeCpuRuntime* rt) {
  using I = typename IsaTraits<P::ISA>::type;
  static_assert(CheckDotParams<I, P>::ok, "");
  detail::RowsOfKProblem p;
  if (const int rc = detail::rows_of_k_problem<OP, EPI, STATIC_N, STATIC_K>(args, &p)) return rc;
  if (p.M == 0 || p.N == 0 || p.batch == 0) return 0;
  const int threads = kernel_workers(rt, P::WORKERS);
  // Nothing is packed: NC has no say in the split.
  detail::DotJob<I, P, EPI> job{
      p.a, p.b, p.bias, p.c, p.M, p.N, p.K, p.stride_a, p.stride_b, p.stride_c, p.batch,
      task_grid(p.batch, threads, P::THREADS_M, p.M, p.N, p.K, P::MR, P::NR, 1 << 30)};
  const long tasks = job.grid.tasks;
  if (tasks > 0x7fffffff) return 3;
  if (rt && rt->parallel_for && threads > 1 && tasks > 1)
    rt->parallel_for(rt->pool, int(tasks), &detail::DotJob<I, P, EPI>::task, &job);
  else
    for (long t = 0; t < tasks; ++t) detail::DotJob<I, P, EPI>::task(&job, int(t), 0);
  return 0;
}

}  // namespace dc_x86
