// gemm_x86.h: the shared core of the x86 fp32 GEMM templates (BLIS structure): vector traits in,
// tunables (Params) in, one thread's region of C out. Op front ends (ops_x86.h) map dense,
// batch_matmul and conv2d onto it; read ops_x86.h's opening comment first for the API.
//
// Guided tour, innermost first:
//   micro_kernel   (register_tile_x86.h) MR x NR register tile of C, MR*NR/W vector
//                  accumulators, fed per k by NR/W vector loads of a packed B row and MR
//                  broadcasts of A (packed: one column of an MR-row panel; direct: MR row
//                  pointers into A, or for conv2d a table of runs, each with MR pointers into
//                  the input). The k loop never checks
//                  bounds: panels are zero-padded to whole MR / NR. A last panel narrower
//                  than NR runs an edge tile of as many whole vectors as it needs
//                  (EdgeParams), over the same panel. Only the final store is
//                  guarded (rows by `r < m`, columns by masked partial stores). The first K block
//                  overwrites C, later ones add to it, and the last one applies the fused
//                  epilogue (bias, relu or GELU) in the same store.
//   pack_*         operand accessors (operands_x86.h: AMatrixMK/KM, AConvNHWC, BMatrixNK/KN)
//                  pack an MR-row A panel (dst[k*MR + i]) or an NR-column B panel
//                  (dst[k*NR + j]) for
//                  k in [k0, k0+kc), zero-filling rows/columns past the operand's edge.
//   gemm_region    the blocking loops over one thread's rectangle [m0,m1) x [n0,n1) of C:
//                    jc (NC) > pc (KC) > pack B block > ic (MC) > pack A block >
//                    LOOP_ORDER 0: jr (NR) > ir (MR)   (B micro-panel stays in L1)
//                    LOOP_ORDER 1: ir (MR) > jr (NR)   (A micro-panel stays in L1)
//                  with packing buffers from this thread's Scratch (thread_local, 64-byte
//                  aligned, grown on demand, never freed before the thread ends).
//   split_threads  how rt->threads workers tile C: tm row bands x tn column bands, each a
//                  private region (no shared panels, no barrier but the parallel_for's return);
//                  with the task grid, in thread_split_x86.h (plain C++, which the cost
//                  model includes too). With Params::SHARE_B the workers pack B together
//                  and take blocks of C instead (shared_b_x86.h).
//
// Everything is a template on the traits (Avx2, Avx512) and on Params, so a translation unit can
// hold many candidates; nothing here has external state except the per-thread Scratch.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "dietcode_cpu.h"
#include "microkernel_avx2.h"
#include "thread_split_x86.h"
// Avx512 exists when the TU is compiled for AVX-512F (-march=x86-64-v4), or when the includer
// defines DC_X86_ENABLE_AVX512 and compiles the include under `#pragma GCC target("avx512f")`
// (GCC 12 does not define __AVX512F__ for a target pragma).
#if defined(__AVX512F__) || defined(DC_X86_ENABLE_AVX512)
#define DC_X86_HAS_AVX512 1
#include "microkernel_avx512.h"
#endif

namespace dc_x86 {

// The fused epilogue; the values are the EPILOGUE numbers of the CUDA templates.
enum class Epilogue : int { kNone = 0, kBias = 1, kRelu = 2, kBiasRelu = 3, kGelu = 4, kBiasGelu = 5 };

enum class Isa : int { kAvx2 = 0, kAvx512 = 1 };

constexpr bool has_bias(Epilogue e) {
  return e == Epilogue::kBias || e == Epilogue::kBiasRelu || e == Epilogue::kBiasGelu;
}
constexpr bool has_relu(Epilogue e) { return e == Epilogue::kRelu || e == Epilogue::kBiasRelu; }
constexpr bool has_gelu(Epilogue e) { return e == Epilogue::kGelu || e == Epilogue::kBiasGelu; }

// The tunables of one candidate; see ops_x86.h for the legal values.
template <int MR_ = 6, int NR_ = 16, int KC_ = 256, int MC_ = 72, int NC_ = 3072,
          int LOOP_ORDER_ = 0, int THREADS_M_ = 0, int PACK_A_ = 1, int PREFETCH_ = 0,
          int UNROLL_ = 4, Isa ISA_ = Isa::kAvx2, int WORKERS_ = 0, int PREFETCH_TILE_ = 0,
          int SHARE_B_ = 0>
struct Params {
  static constexpr int MR = MR_, NR = NR_, KC = KC_, MC = MC_, NC = NC_;
  static constexpr int LOOP_ORDER = LOOP_ORDER_, THREADS_M = THREADS_M_, PACK_A = PACK_A_;
  static constexpr int PREFETCH = PREFETCH_, UNROLL = UNROLL_;
  static constexpr Isa ISA = ISA_;
  static constexpr int WORKERS = WORKERS_;
  // The width of a packed B panel, the k-step stride of b in the micro-kernel: NR, but for an
  // edge tile (EdgeParams below), which computes fewer columns of the same panels.
  static constexpr int PANEL_NR = NR_;
  // The W-broadcast form (A's rows read in place): 1 prefetches the next register tile's rows
  // of A instead of this tile's PREFETCH k steps ahead (register_tile_x86.h, accumulate).
  static constexpr int PREFETCH_TILE = PREFETCH_TILE_;
  // On several workers, 1 packs the core's B once into panels every worker reads, then hands
  // out blocks of MC x NC of C (shared_b_x86.h): W in the BLIS form, X in the W-broadcast
  // form (whose space calls it SHARE_X). 0 cuts C into THREADS_M x tn bands, each packing
  // its own B.
  static constexpr int SHARE_B = SHARE_B_;
};

// The register tile of an edge panel: P's tile NR_USED columns wide (whole vectors, fewer than
// P::NR) over panels packed P::NR wide. A panel of n < NR columns (the last of a thread's
// region or of an NC block) then runs FMAs on at most W - 1 columns of zero padding instead of
// up to NR - 1: in the W-broadcast form, whose vectors run along M = 16 T, a 4 x 24 tile over 64
// rows computed 72, an eighth more than needed (docs/results/cpu/README.md, AG).
template <class P, int NR_USED>
struct EdgeParams : P {
  static_assert(NR_USED < P::NR, "an edge tile is narrower than the panel");
  static constexpr int NR = NR_USED;
};

// The workers a kernel runs on: every one of the runtime's, or at most WORKERS (> 0). A kernel
// on one worker runs on the calling thread and wakes no pool thread: below some tens of
// microseconds of work, waking one (tens of microseconds on a virtual machine) costs more
// than it brings, and only measurement can say where that is on a given host.
inline int kernel_workers(const DietcodeCpuRuntime* rt, int workers_param) {
  const int threads = rt && rt->threads > 0 ? rt->threads : 1;
  return workers_param > 0 && workers_param < threads ? workers_param : threads;
}

template <Isa>
struct IsaTraits;
template <>
struct IsaTraits<Isa::kAvx2> {
  using type = Avx2;
};
#ifdef DC_X86_HAS_AVX512
template <>
struct IsaTraits<Isa::kAvx512> {
  using type = Avx512;
};
#endif

// Compile-time checks of a Params against the ISA; a failing candidate does not compile.
template <class I, class P>
struct CheckParams {
  static constexpr int NV = P::NR / I::W;
  static_assert(P::MR >= 1 && P::MR <= 32, "MR in [1, 32]");
  static_assert(P::NR >= I::W && P::NR % I::W == 0, "NR must be a positive multiple of the vector width");
  static_assert(P::MR * NV + NV + 1 <= I::kRegs,
                "MR*NR/W accumulators + NR/W B vectors + 1 broadcast must fit the vector registers");
  static_assert(P::KC >= 1, "KC >= 1");
  static_assert(P::MC >= P::MR && P::MC % P::MR == 0, "MC must be a positive multiple of MR");
  static_assert(P::NC >= P::NR && P::NC % P::NR == 0, "NC must be a positive multiple of NR");
  static_assert(P::LOOP_ORDER == 0 || P::LOOP_ORDER == 1, "LOOP_ORDER is 0 or 1");
  static_assert(P::THREADS_M >= 0, "THREADS_M >= 0 (0: automatic)");
  static_assert(P::PACK_A == 0 || P::PACK_A == 1, "PACK_A is 0 or 1");
  static_assert(P::PREFETCH >= 0 && P::PREFETCH <= 64, "PREFETCH in [0, 64] k steps");
  static_assert(P::UNROLL >= 1 && P::UNROLL <= 16, "UNROLL in [1, 16]");
  static_assert(P::WORKERS >= 0, "WORKERS >= 0 (0: every worker of the runtime)");
  static_assert(P::PREFETCH_TILE == 0 || P::PREFETCH_TILE == 1, "PREFETCH_TILE is 0 or 1");
  static_assert(P::SHARE_B == 0 || P::SHARE_B == 1, "SHARE_B is 0 or 1");
  static constexpr bool ok = true;
};

template <class P>
struct TileOf {
  using type = P;
};

// f(TileOf<Q>{}) with Q = EdgeParams<P, v * W>, the narrowest edge tile that covers a panel of
// n columns, for n of fewer whole vectors than P::NR (v < NR / W). P itself is never
// instantiated here: a second inlined copy of its k loop, in this context, is one GCC spilled
// accumulators in (tests/x86/register_tile_test.cc).
template <class I, class P, int V = 1, class F>
__attribute__((always_inline)) inline void with_edge_tile(int n, F&& f) {
  static_assert(V * I::W < P::NR, "an edge tile is narrower than the panel");
  if constexpr ((V + 1) * I::W >= P::NR) {
    f(TileOf<EdgeParams<P, V * I::W>>{});
  } else {
    if (n <= V * I::W)
      f(TileOf<EdgeParams<P, V * I::W>>{});
    else
      with_edge_tile<I, P, V + 1>(n, f);
  }
}

}  // namespace dc_x86

// The register tile: the epilogue's activation and the micro-kernel (register_tile_x86.h); then
// the A and B accessors that pack panels (operands_x86.h).
#include "operands_x86.h"
#include "register_tile_x86.h"

namespace dc_x86 {

// ---------------------------------------------------------------------------------------------
// Per-thread scratch for the packed panels: 64-byte aligned, grown on demand, reused by every
// later call on this thread (any candidate, any op), freed when the thread ends.
struct Scratch {
  float* p = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(p); }
  float* get(size_t need_bytes) {
    if (need_bytes > bytes) {
      std::free(p);
      const size_t grown = std::max(need_bytes, bytes + bytes / 2);
      bytes = (grown + 4095) & ~size_t(4095);
      p = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!p) bytes = 0;
    }
    return p;
  }
};
inline Scratch& thread_scratch() {
  static thread_local Scratch scratch;
  return scratch;
}
// The calling thread's panels of B shared with the other workers (shared_b_x86.h): apart from
// thread_scratch, which the caller's own blocks grow (and so move) while the panels are read.
inline Scratch& shared_scratch() {
  static thread_local Scratch scratch;
  return scratch;
}

// ---------------------------------------------------------------------------------------------
// One thread's rectangle [m0,m1) x [n0,n1) of C = epilogue(A . B (+ bias)), full K, with the
// column tiles laid from n0 on (see gemm_region below, which picks n0).
// Returns 0, or 1 when the scratch cannot be allocated.
// CT: C is stored transposed, C(i, j) at C[j*ldc + i], and bias[i] belongs to row i (the
// W-broadcast form, wbcast_x86.h, which computes C^T = W X^T with W as this A).
template <class I, class P, Epilogue E, bool CT = false, class AOp, class BOp>
int gemm_region_from(const AOp& A, const BOp& B, const float* bias, float* C, long ldc, long K,
                     long m0, long m1, long n0, long n1) {
  static_assert(CheckParams<I, P>::ok, "");
  constexpr int MR = P::MR, NR = P::NR, KC = P::KC, MC = P::MC, NC = P::NC;
  // A in place through runs (conv2d's direct form), in place by rows, or packed.
  constexpr bool kRunsA = !P::PACK_A && AOp::kRuns;
  constexpr bool kPackA = !kRunsA && (P::PACK_A || !AOp::kDirect);
  // B packed ahead of time (constant weights): its panels are read where they lie.
  constexpr bool kPackB = !kIsPrepacked<BOp>;
  using Run = ConvRun<MR>;
  if (m1 <= m0 || n1 <= n0) return 0;
  const long kc_max = std::max<long>(1, std::min<long>(KC, K));
  const long nc_max = std::min<long>(NC, round_up(n1 - n0, NR));
  const long mc_max = std::min<long>(MC, round_up(m1 - m0, MR));
  const size_t b_floats = kPackB ? size_t(round_up(kc_max * nc_max, 16)) : 0;
  // The runs' table: one per MR panel of an MC block, each with room for its terminator.
  long run_stride = 0;
  if constexpr (kRunsA) run_stride = A.max_runs(kc_max) + 1;
  const size_t a_floats =
      kPackA  ? size_t(round_up(kc_max * mc_max, 16))
      : kRunsA ? size_t(round_up(long(sizeof(Run)) / 4 * run_stride * (mc_max / MR), 16))
               : 0;
  // No scratch at all when neither operand is packed (A in place, B packed ahead of time).
  float* buf = b_floats + a_floats ? thread_scratch().get((b_floats + a_floats) * sizeof(float))
                                   : nullptr;
  if (!buf && b_floats + a_floats) return 1;
  float* bpack = buf;
  float* apack = buf + b_floats;
  Run* runs = reinterpret_cast<Run*>(apack);

  for (long jc = n0; jc < n1; jc += NC) {
    const long nc = std::min<long>(NC, n1 - jc);
    long pc = 0;
    do {  // at least once: K == 0 still writes epilogue(bias)
      const long kc = std::min<long>(KC, K - pc);
      const bool first = pc == 0, last = pc + kc >= K;
      // One MC block of rows (small M) and loop order 0: pack each B micro-panel right before
      // its only use, so it is read back from L1 instead of from a B block long evicted to L3.
      const bool fused = kPackB && P::LOOP_ORDER == 0 && m1 - m0 <= MC;
      // The block's panels, kc * NR floats each, one after another.
      const float* bblock = bpack;
      if constexpr (!kPackB) {
        bblock = B.block(jc, pc, kc);
      } else if (!fused) {
        for (long jr = 0; jr < nc; jr += NR)
          B.template pack<NR>(jc + jr, int(std::min<long>(NR, nc - jr)), pc, kc, bpack + jr * kc);
      }
      for (long ic = m0; ic < m1; ic += MC) {
        const long mc = std::min<long>(MC, m1 - ic);
        if constexpr (kPackA)
          for (long ir = 0; ir < mc; ir += MR)
            A.template pack<MR>(ic + ir, int(std::min<long>(MR, mc - ir)), pc, kc, apack + ir * kc);
        if constexpr (kRunsA)
          for (long ir = 0; ir < mc; ir += MR)
            A.template runs<MR>(ic + ir, int(std::min<long>(MR, mc - ir)), pc, kc,
                                runs + ir / MR * run_stride);
        // P's register tile at (ir, jr).
        auto tile = [&](long ir, long jr) {
          const int m = int(std::min<long>(MR, mc - ir)), n = int(std::min<long>(NR, nc - jr));
          float* c = CT ? C + (jc + jr) * ldc + ic + ir : C + (ic + ir) * ldc + jc + jr;
          const float* tile_bias = bias ? bias + (CT ? ic + ir : jc + jr) : nullptr;
          if constexpr (kRunsA) {
            static_assert(!CT, "the runs' form stores C row-major");
            micro_kernel_runs<I, P, E>(runs + ir / MR * run_stride, bblock + jr * kc, c, ldc, m,
                                       n, first, last, tile_bias);
          } else {
            const float* a;
            long lda = 0;
            // The next tile's rows of A (PREFETCH_TILE): the next MR rows of this thread's,
            // the next MC block's first when this block ends; none after its last.
            const float* next_a = nullptr;
            int next_m = 0;
            if constexpr (kPackA) {
              a = apack + ir * kc;
            } else {
              a = A.row_ptr(ic + ir, pc);
              lda = A.ld;
              if constexpr (P::PREFETCH_TILE) {
                const long next = ic + ir + MR;
                if (next < m1) {
                  next_a = A.row_ptr(next, pc);
                  next_m = int(std::min<long>(MR, m1 - next));
                }
              }
            }
            micro_kernel<I, P, kPackA, E, CT>(kc, a, lda, bblock + jr * kc, c, ldc, m, n, first,
                                              last, tile_bias, next_a, next_m);
          }
        };
        // P's tile runs every panel but a last one of fewer whole vectors than NR (nc_rest
        // columns), which runs the narrowest edge tile that covers it (with_edge_tile), chosen
        // once for its column of tiles.
        const long nc_rest = nc % NR;
        const bool narrow_edge = I::W < NR && nc_rest > 0 && round_up(nc_rest, I::W) < NR;
        const long nc_main = narrow_edge ? nc - nc_rest : nc;
        // The same operands for an edge tile at (ir, jr), as `tile` finds them. `tile` keeps
        // its own copy of this: written as one generic lambda over P and the edge tiles, or
        // through this helper, P's k loop came out of GCC with an accumulator of a 6 x 16 tile
        // kept on the stack (tests/x86/register_tile_test.cc).
        struct TileOperands {
          const float* a = nullptr;
          long lda = 0;
          const float* next_a = nullptr;
          int next_m = 0;
          float* c;
          const float* bias;
          int m, n;
        };
        auto operands_of = [&](long ir, long jr) {
          TileOperands t;
          t.m = int(std::min<long>(MR, mc - ir)), t.n = int(std::min<long>(NR, nc - jr));
          t.c = CT ? C + (jc + jr) * ldc + ic + ir : C + (ic + ir) * ldc + jc + jr;
          t.bias = bias ? bias + (CT ? ic + ir : jc + jr) : nullptr;
          if constexpr (kPackA) {
            t.a = apack + ir * kc;
          } else if constexpr (!kRunsA) {
            t.a = A.row_ptr(ic + ir, pc);
            t.lda = A.ld;
            if constexpr (P::PREFETCH_TILE) {
              const long next = ic + ir + MR;
              if (next < m1) {
                t.next_a = A.row_ptr(next, pc);
                t.next_m = int(std::min<long>(MR, m1 - next));
              }
            }
          }
          return t;
        };
        // The edge column's tiles, rows [ir0, ir1); nothing to instantiate for a tile one
        // vector wide, which has no narrower one.
        auto edge_column = [&](long ir0, long ir1) {
          if constexpr (I::W < NR)
            with_edge_tile<I, P>(int(nc_rest), [&](auto tile_of) {
              using Q = typename decltype(tile_of)::type;
              for (long ir = ir0; ir < ir1; ir += MR) {
                const TileOperands t = operands_of(ir, nc_main);
                if constexpr (kRunsA)
                  micro_kernel_runs<I, Q, E>(runs + ir / MR * run_stride, bblock + nc_main * kc,
                                             t.c, ldc, t.m, t.n, first, last, t.bias);
                else
                  micro_kernel<I, Q, kPackA, E, CT>(kc, t.a, t.lda, bblock + nc_main * kc, t.c, ldc,
                                                    t.m, t.n, first, last, t.bias, t.next_a,
                                                    t.next_m);
              }
            });
        };
        if (fused) {
          for (long jr = 0; jr < nc; jr += NR) {
            if constexpr (kPackB)  // fused implies kPackB; this keeps BPrepacked's path compiling
              B.template pack<NR>(jc + jr, int(std::min<long>(NR, nc - jr)), pc, kc,
                                  bpack + jr * kc);
            if (jr < nc_main)
              for (long ir = 0; ir < mc; ir += MR) tile(ir, jr);
            else
              edge_column(0, mc);
          }
        } else if constexpr (P::LOOP_ORDER == 0) {
          for (long jr = 0; jr < nc_main; jr += NR)
            for (long ir = 0; ir < mc; ir += MR) tile(ir, jr);
          if (narrow_edge) edge_column(0, mc);
        } else {
          for (long ir = 0; ir < mc; ir += MR) {
            for (long jr = 0; jr < nc_main; jr += NR) tile(ir, jr);
            if (narrow_edge) edge_column(ir, ir + MR);
          }
        }
      }
      pc += kc;
    } while (pc < K);
  }
  return 0;
}

// The columns before the first one whose C address starts a cache line (0 to 15), when every
// row of C is aligned alike (ldc a multiple of 16 floats); 0 otherwise.
inline long columns_to_line_alignment(const float* c, long ldc) {
  constexpr long kLine = 64 / sizeof(float);
  if (ldc % kLine != 0 || reinterpret_cast<uintptr_t>(c) % sizeof(float) != 0) return 0;
  const long floats = long(reinterpret_cast<uintptr_t>(c) / sizeof(float)) % kLine;
  return (kLine - floats) % kLine;
}

// One thread's rectangle of C, as gemm_region_from, with the column tiles laid so that they
// start on cache lines of C. A caller's C need not be: malloc'd memory is 16-byte aligned, so
// each row of a 16-float tile straddles two lines, and with the read-back after each K block
// that made the BLIS form's kernels 6-20% slower on a Zen 3 core (docs/results/cpu, AE). The
// columns before the first aligned one go first as a strip of their own, which costs one more
// packing of A and a panel of FMAs mostly on zero padding: paid only where C is misaligned and the
// region is at least four tiles wide. Not with B packed ahead of time, whose panels lie on the tile
// grid from column 0, nor for the transposed store, whose rows run along A's rows.
template <class I, class P, Epilogue E, bool CT = false, class AOp, class BOp>
int gemm_region(const AOp& A, const BOp& B, const float* bias, float* C, long ldc, long K, long m0,
                long m1, long n0, long n1) {
  if constexpr (!CT && !kIsPrepacked<BOp>) {
    const long lead = columns_to_line_alignment(C + n0, ldc);
    if (lead > 0 && n1 - n0 >= lead + 4 * P::NR) {
      if (const int rc =
              gemm_region_from<I, P, E, CT>(A, B, bias, C, ldc, K, m0, m1, n0, n0 + lead))
        return rc;
      n0 += lead;
    }
  }
  return gemm_region_from<I, P, E, CT>(A, B, bias, C, ldc, K, m0, m1, n0, n1);
}

// B packed ahead of time for the tile of P (BPrepacked, operands_x86.h): the floats it takes
// for an N x K B, and the packing itself, into dst (64-byte aligned). Each KC block's panels
// are what gemm_region would pack for that block, so a kernel reading them computes the same.
template <class P>
constexpr long prepacked_b_floats(long N, long K) {
  return round_up(N, P::NR) * K;
}
// prepack_b_columns packs only the panels of columns [j_begin, j_end) (j_begin on a panel
// edge), so that workers can share the packing (shared_b_x86.h).
template <class P, class BOp>
void prepack_b_columns(const BOp& B, long N, long K, long j_begin, long j_end, float* dst) {
  const long npad = round_up(N, P::NR);
  for (long pc = 0; pc < K; pc += P::KC) {
    const long kc = std::min<long>(P::KC, K - pc);
    for (long j0 = j_begin; j0 < j_end; j0 += P::NR)
      B.template pack<P::NR>(j0, int(std::min<long>(P::NR, N - j0)), pc, kc,
                             dst + pc * npad + j0 * kc);
  }
}
template <class P, class BOp>
void prepack_b(const BOp& B, long N, long K, float* dst) {
  prepack_b_columns<P>(B, N, K, 0, N, dst);
}

}  // namespace dc_x86

