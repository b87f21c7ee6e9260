// ops_x86.h: the x86-64 fp32 operator templates of dietcode (dense, batch_matmul, conv2d) on one
// BLIS-style GEMM core. Header-only C++17; the tuner and the pack compile many candidates into
// one translation unit with the system g++ (-O2/-O3 -march=x86-64-v3 for Isa::kAvx2,
// -march=x86-64-v4 for Isa::kAvx512) and -I <repo>/templates.
//
// Guided tour
//   dietcode_cpu.h        the C contract: DietcodeCpuRuntime (threads + parallel_for), the kernel
//                         signature DietcodeCpuKernelFn.
//   microkernel_avx2.h    Avx2 vector traits (__m256, W = 8, 16 registers, masked edges, exp2).
//   microkernel_avx512.h  Avx512 traits (__m512, W = 16, 32 registers), only under __AVX512F__.
//   gemm_x86.h            Params, Epilogue, the MR x NR micro-kernel, packing, blocking loops,
//                         the thread split. Its opening comment explains the loop nest.
//   ops_x86.h             this file: run<OP, EPI, PARAMS, STATIC_N, STATIC_K>(args, rt).
//   dot_x86.h             the dot-product form (run_dot): B [N][K] read in place, for small M.
//   wbcast_x86.h          the W-broadcast form (run_wbcast): C^T = W X^T on this file's core,
//                         W [N][K] broadcast in place, X packed; for small and middling M.
//   serial_runtime.h      SerialRuntime and SimpleThreadPool, for tests and benchmarks.
//
// A candidate (the whole code-generation contract):
//
//   #include "x86/ops_x86.h"
//   extern "C" int dc_cand_0(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
//     return dc_x86::run<dc_x86::OpKind::kDense, dc_x86::Epilogue::kBiasGelu,
//                        dc_x86::Params<6, 16, 256, 72, 3072, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx2>,
//                        768, 768>(a, rt);
//   }
//
// run<OP, EPI, P, STATIC_N = 0, STATIC_K = 0>(const DietcodeArgs*, const DietcodeCpuRuntime*)
//   OP   OpKind::kDense            Y[M,N] = X[M,K] . W[N,K]^T; a = X, b = W; batch ignored (1).
//        OpKind::kDenseKN          the same with W stored [K][N] (weight_layout KN: ONNX MatMul).
//        OpKind::kBatchMatmulNN    C[b] = A[b] . B[b], A stored [M][K], B stored [K][N]
//        OpKind::kBatchMatmulTN    A stored [K][M] (transpose_a)
//        OpKind::kBatchMatmulNT    B stored [N][K] (transpose_b)
//        OpKind::kBatchMatmulTT    both; batch elements at a + i*stride_a, b + i*stride_b,
//                                  c + i*stride_c (elements); C[b] is [M][N] row-major.
//        OpKind::kConv2d           NHWC input X[n,h,w,c] (a), KRSC weights (b), Y[n,p,q,k] (c);
//                                  geometry from the conv_* / stride / pad / dilation fields
//                                  (args->m/n/k are not read). GEMM: M = N*P*Q, N = K filters,
//                                  K = R*S*C. A is packed straight from the input, or read
//                                  in place (PACK_A = 0).
//   EPI  Epilogue::kNone, kBias, kRelu, kBiasRelu, kGelu, kBiasGelu (= EPILOGUE 0..5 of the CUDA
//        templates). Bias: args->bias, N floats (per filter for conv2d), required iff EPI has
//        one. GELU is the tanh form, computed as x / (1 + e^(-2u)) with a vector 2^t (~1e-7
//        relative to the scalar formula).
//   P    Params<MR, NR, KC, MC, NC, LOOP_ORDER, THREADS_M, PACK_A, PREFETCH, UNROLL, ISA,
//        WORKERS, PREFETCH_TILE, SHARE_B>, every argument defaulted (Params<> =
//        6,16,256,72,3072,0,0,1,0,4,kAvx2,0,0,0). Let W = 8 (kAvx2) or
//        16 (kAvx512), R = 16 or 32 registers.
//          MR          rows of the register tile, 1..32, and MR*(NR/W) + NR/W + 1 <= R
//                      (AVX2: 6x16, 4x24, 3x32, 8x8, 14x8, 1x8 ...; AVX-512: 14x32, 6x64 ...)
//          NR          columns, a multiple of W
//          KC          K block, >= 1 (any value; K need not be a multiple)
//          MC          M block, a multiple of MR
//          NC          N block, a multiple of NR
//          LOOP_ORDER  0: jr outer, ir inner (B micro-panel in L1); 1: ir outer, jr inner
//          THREADS_M   row bands of the thread grid: 0 automatic (cost model), else the largest
//                      divisor of rt->threads <= THREADS_M (the rest split N)
//          PACK_A      1 pack A panels; 0 read A in place: rows for dense and batch_matmul
//                      NN/NT, runs of the NHWC input for conv2d (the direct form: no im2col
//                      copy at all); TN packs regardless
//          PREFETCH    0 none, else software prefetch of the packed panels this many k steps
//                      ahead (and of the C tile), 1..64
//          UNROLL      k-loop unroll, 1..16 (K remainders handled; no divisibility needed)
//          ISA         Isa::kAvx2, or Isa::kAvx512 (only compiles under -mavx512f)
//          WORKERS     0: every worker of rt; n > 0: at most n (1: the caller alone, no pool
//                      thread woken)
//          PREFETCH_TILE  run_wbcast with PREFETCH > 0: 1 prefetches the next register tile's
//                      rows of W instead of this tile's PREFETCH k steps ahead; no effect
//                      elsewhere
//          SHARE_B     1: B packed once by all workers, blocks of MC x NC handed out
//                      (shared_b_x86.h); 0: a band of C per worker, each packing its own B
//        A Params that breaks a constraint fails to compile with a static_assert message.
//   STATIC_N, STATIC_K   0 = read from args; else the compile-time N and K of the GEMM (for
//        conv2d: N = filters, K = R*S*C). run returns 2 when args disagree with them.
// Returns 0; 1 when packing scratch cannot be allocated; 2 on a static-dimension mismatch;
// 3 on a malformed problem (negative sizes, missing bias). M = 0 or N = 0 writes nothing;
// K = 0 writes epilogue(bias).
//
// Constant weights (dense, dense KN and conv2d, whose B is one matrix per call):
//   prepack<OP, P, STATIC_N, STATIC_K>(args, dst) packs B once into every NR-column panel of
//   every KC block (gemm_x86.h's prepack_b) and returns the floats that takes (dst null: only
//   the count); run_prepacked<OP, EPI, P, ...>(args, rt, panels) is run reading B from those
//   panels, with no packing of B at all. A pack does this for weights its caller declares
//   constant (dietcode_declare_constant); the tuner times run, or run_prepacked under
//   tune --constant-weights.
//
// Threads: the output is tiled into tm x tn private regions (Params::THREADS_M) and handed to
// rt->parallel_for as tm*tn tasks (batch_matmul with batch >= threads: runs of consecutive
// batch elements, thread_split_x86.h's task_grid). Each worker packs into its own thread_local
// scratch, so the only synchronisation is parallel_for's return. With SHARE_B = 1 the workers
// pack B together instead and take blocks of C as they free up (shared_b_x86.h).
#pragma once

#include <type_traits>

#include "gemm_x86.h"
#include "shared_b_x86.h"

namespace dc_x86 {

enum class OpKind : int {
  kDense = 0,
  kBatchMatmulNN = 1,
  kBatchMatmulTN = 2,
  kBatchMatmulNT = 3,
  kBatchMatmulTT = 4,
  kConv2d = 5,
  kDenseKN = 6,
};

namespace detail {

template <class I, class P, Epilogue E, class AOp, class BOp, bool CT = false>
struct GemmJob {
  AOp a;
  BOp b;
  const float* bias;
  float* c;
  long M, N, K, ldc;
  long stride_a, stride_b, stride_c;  // batch element offsets (elements)
  long batch;
  TaskGrid grid;
  int error = 0;

  static void task(void* ctx, int t, int /*worker*/) {
    GemmJob& j = *static_cast<GemmJob*>(ctx);
    const TaskRegion r = task_region(t, j.grid, j.batch, j.M, j.N, P::MR, P::NR);
    for (long e = r.batch0; e < r.batch1; ++e) {
      AOp a = j.a;
      BOp b = j.b;
      a.p += e * j.stride_a;
      b.p += e * j.stride_b;
      if (gemm_region<I, P, E, CT>(a, b, j.bias, j.c + e * j.stride_c, j.ldc, j.K, r.m0, r.m1,
                                   r.n0, r.n1))
        __atomic_store_n(&j.error, 1, __ATOMIC_RELAXED);
    }
  }
};

// CT: the GEMM computed is C^T (M x N, stored transposed: row stride M), see gemm_region.
template <class I, class P, Epilogue E, bool CT = false, class AOp, class BOp>
int launch(const DietcodeCpuRuntime* rt, const AOp& a, const BOp& b, const float* bias, float* c,
           long batch, long M, long N, long K, long stride_a, long stride_b, long stride_c) {
  if (M == 0 || N == 0 || batch == 0) return 0;
  const int threads = kernel_workers(rt, P::WORKERS);
  if (shares_b<P, CT, BOp>(rt, threads, batch, c, CT ? M : N))
    return run_shared_b<I, P, E, CT>(rt, threads, a, b, bias, c, batch, M, N, K, stride_a,
                                     stride_b, stride_c);
  using Job = GemmJob<I, P, E, AOp, BOp, CT>;
  Job job{a, b, bias, c, M, N, K, CT ? M : N, stride_a, stride_b, stride_c, batch,
          task_grid(batch, threads, P::THREADS_M, M, N, K, P::MR, P::NR, P::NC)};
  const long tasks = job.grid.tasks;
  if (tasks > 0x7fffffff) return 3;
  if (rt && rt->parallel_for && threads > 1 && tasks > 1)
    rt->parallel_for(rt->pool, int(tasks), &Job::task, &job);
  else
    for (long t = 0; t < tasks; ++t) Job::task(&job, int(t), 0);
  return job.error;
}

}  // namespace detail

namespace detail {

// The GEMM an op's arguments describe: its A and B accessors and sizes, read and checked once
// for run, run_prepacked and prepack. with_gemm calls f(a, b, problem) and returns what f
// returns (>= 0), or -2 on a static-dimension mismatch, -3 on a malformed problem (see run).
struct GemmProblem {
  const float* bias;  // null unless the epilogue has one
  float* c;
  long batch, M, N, K;
  long stride_a, stride_b, stride_c;  // batch element offsets (elements); 0 for dense, conv2d
};

template <OpKind OP, Epilogue EPI, long STATIC_N, long STATIC_K, class F>
long with_gemm(const DietcodeArgs* args, F&& f) {
  static_assert(STATIC_N >= 0 && STATIC_K >= 0, "static dimensions are >= 0 (0: dynamic)");
  GemmProblem g{};
  g.bias = static_cast<const float*>(args->bias);
  if (has_bias(EPI) && !g.bias) return -3;
  if (!has_bias(EPI)) g.bias = nullptr;
  g.c = static_cast<float*>(args->c);

  if constexpr (OP == OpKind::kConv2d) {
    g.batch = 1;
    g.M = long(args->conv_n) * args->conv_p * args->conv_q;
    g.N = STATIC_N ? STATIC_N : args->conv_k;
    g.K = STATIC_K ? STATIC_K : long(args->conv_r) * args->conv_s * args->conv_c;
    if (STATIC_N && args->conv_k != STATIC_N) return -2;
    if (STATIC_K && long(args->conv_r) * args->conv_s * args->conv_c != STATIC_K) return -2;
    if (g.M < 0 || g.N < 0 || g.K < 0 || args->conv_c <= 0 || args->conv_s <= 0)
      return g.M == 0 ? 0 : -3;
    AConvNHWC a{static_cast<const float*>(args->a),
                args->conv_h, args->conv_w, args->conv_c, args->conv_r, args->conv_s,
                args->conv_p, args->conv_q, args->stride_h, args->stride_w, args->pad_h,
                args->pad_w, args->dilation_h, args->dilation_w};
    BMatrixNK b{static_cast<const float*>(args->b), g.K};
    return f(a, b, g);
  } else {
    g.M = args->m;
    g.N = STATIC_N ? STATIC_N : args->n;
    g.K = STATIC_K ? STATIC_K : args->k;
    if ((STATIC_N && args->n != STATIC_N) || (STATIC_K && args->k != STATIC_K)) return -2;
    if (g.M < 0 || g.N < 0 || g.K < 0) return -3;
    const float* A = static_cast<const float*>(args->a);
    const float* B = static_cast<const float*>(args->b);
    constexpr bool ta = OP == OpKind::kBatchMatmulTN || OP == OpKind::kBatchMatmulTT;
    constexpr bool tb = OP == OpKind::kDense || OP == OpKind::kBatchMatmulNT || OP == OpKind::kBatchMatmulTT;
    constexpr bool dense = OP == OpKind::kDense || OP == OpKind::kDenseKN;
    g.batch = dense ? 1 : args->batch;
    if (g.batch < 0) return -3;
    g.stride_a = dense ? 0 : args->stride_a;
    g.stride_b = dense ? 0 : args->stride_b;
    g.stride_c = dense ? 0 : args->stride_c;
    using AOp = std::conditional_t<ta, AMatrixKM, AMatrixMK>;
    using BOp = std::conditional_t<tb, BMatrixNK, BMatrixKN>;
    const AOp a{A, ta ? g.M : g.K};
    const BOp b{B, tb ? g.K : g.N};
    return f(a, b, g);
  }
}

// The ops whose B is one matrix for the whole call (dense's W, conv2d's filters), which a
// pack may hold packed ahead of time when the caller declares it constant.
constexpr bool has_constant_b(OpKind op) {
  return op == OpKind::kDense || op == OpKind::kDenseKN || op == OpKind::kConv2d;
}

}  // namespace detail

template <OpKind OP, Epilogue EPI, class P = Params<>, long STATIC_N = 0, long STATIC_K = 0>
int run(const DietcodeArgs* args, const DietcodeCpuRuntime* rt) {
  using I = typename IsaTraits<P::ISA>::type;
  static_assert(CheckParams<I, P>::ok, "");
  const long code = detail::with_gemm<OP, EPI, STATIC_N, STATIC_K>(
      args, [&](const auto& a, const auto& b, const detail::GemmProblem& g) -> long {
        return detail::launch<I, P, EPI>(rt, a, b, g.bias, g.c, g.batch, g.M, g.N, g.K,
                                         g.stride_a, g.stride_b, g.stride_c);
      });
  return int(code < 0 ? -code : code);
}

// Constant weights (dense, conv2d): prepack writes B's panels for this kernel's tile into dst
// (prepack_b, gemm_x86.h; 64-byte aligned, prepacked_b_floats floats) and returns how many
// floats they take; with dst null it only returns the count (0: nothing to pack, M = 0 for
// conv2d). -2 or -3 for the problems run refuses with 2 or 3. run_prepacked is run with B
// read from those panels instead of args->b; any kernel with the same NR and KC reads the
// same panels (KC past K packs as K).
template <OpKind OP, class P = Params<>, long STATIC_N = 0, long STATIC_K = 0>
long long prepack(const DietcodeArgs* args, float* dst) {
  static_assert(detail::has_constant_b(OP), "prepack: dense and conv2d only");
  return detail::with_gemm<OP, Epilogue::kNone, STATIC_N, STATIC_K>(
      args, [&](const auto&, const auto& b, const detail::GemmProblem& g) -> long {
        if (dst) prepack_b<P>(b, g.N, g.K, dst);
        return prepacked_b_floats<P>(g.N, g.K);
      });
}

template <OpKind OP, Epilogue EPI, class P = Params<>, long STATIC_N = 0, long STATIC_K = 0>
int run_prepacked(const DietcodeArgs* args, const DietcodeCpuRuntime* rt, const float* b_panels) {
  using I = typename IsaTraits<P::ISA>::type;
  static_assert(CheckParams<I, P>::ok, "");
  static_assert(detail::has_constant_b(OP), "run_prepacked: dense and conv2d only");
  const long code = detail::with_gemm<OP, EPI, STATIC_N, STATIC_K>(
      args, [&](const auto& a, const auto&, const detail::GemmProblem& g) -> long {
        const BPrepacked b{b_panels, round_up(g.N, P::NR)};
        return detail::launch<I, P, EPI>(rt, a, b, g.bias, g.c, g.batch, g.M, g.N, g.K,
                                         g.stride_a, g.stride_b, g.stride_c);
      });
  return int(code < 0 ? -code : code);
}

namespace detail {

// The problem of an op whose A is [M][K] and B is [N][K] (dense with W [N][K], batch_matmul
// NT), which the forms that read B's rows in place compute (dot_x86.h, wbcast_x86.h).
struct RowsOfKProblem {
  const float *a, *b, *bias;  // bias: null unless the epilogue has one
  float* c;
  long M, N, K, batch;
  long stride_a, stride_b, stride_c;  // batch element offsets (elements); 0 for dense
};

// Reads args as run() does: 0 with *p filled, 2 on a static-dimension mismatch, 3 on a malformed
// problem or an op kind whose B is not [N][K].
template <OpKind OP, Epilogue EPI, long STATIC_N, long STATIC_K>
int rows_of_k_problem(const DietcodeArgs* args, RowsOfKProblem* p) {
  if constexpr (OP != OpKind::kDense && OP != OpKind::kBatchMatmulNT) {
    return 3;
  } else {
    constexpr bool dense = OP == OpKind::kDense;
    p->bias = has_bias(EPI) ? static_cast<const float*>(args->bias) : nullptr;
    if (has_bias(EPI) && !p->bias) return 3;
    p->M = args->m;
    p->N = STATIC_N ? STATIC_N : args->n;
    p->K = STATIC_K ? STATIC_K : args->k;
    if ((STATIC_N && args->n != STATIC_N) || (STATIC_K && args->k != STATIC_K)) return 2;
    p->batch = dense ? 1 : args->batch;
    if (p->M < 0 || p->N < 0 || p->K < 0 || p->batch < 0) return 3;
    p->a = static_cast<const float*>(args->a);
    p->b = static_cast<const float*>(args->b);
    p->c = static_cast<float*>(args->c);
    p->stride_a = dense ? 0 : long(args->stride_a);
    p->stride_b = dense ? 0 : long(args->stride_b);
    p->stride_c = dense ? 0 : long(args->stride_c);
    return 0;
  }
}

}  // namespace detail

}  // namespace dc_x86

#include "dot_x86.h"
#include "wbcast_x86.h"
