// gemm_core_f32: the fp32 SIMT GEMM micro-kernel every fp32 template shares (dense_f32,
// batch_matmul_f32, conv2d_f32). A template includes this file, then the tile loaders it needs
// (gemm_tiles_f32.cuh, or its own), and writes a short entry point that builds one loader per
// operand and calls dc::gemm_block. Compiled by NVRTC only: no host headers, cp.async through
// inline PTX. No include guard on purpose: a host-emulation test includes a template several
// times, each in its own namespace.
//
// Guided tour
// * A block computes one BM x BN tile of C, BM = WARPS_M*THREADS_M*TM and
//   BN = WARPS_N*THREADS_N*TN, over all of K or over one of SPLITK slices of it.
// * Tiles are kept in shared memory k-major (As[k][m], Bs[k][n]) so that for one k a thread
//   reads its TM (TN) values as float4/float2 vectors: TM/FM + TN/FN shared loads feed TM*TN
//   FMAs, and only TM+TN fragment registers are live per k. A warp's vector read touches
//   THREADS_M (THREADS_N) contiguous chunks of one k-row, which is free of bank conflicts. The
//   row pitch is padded to 4 (mod 8) floats to spread transposing stores over the banks.
// * How a tile gets from global memory into that layout is the loader's business: the core
//   only asks an operand's loader to begin an output tile and to bring in one BK-deep k-tile
//   (a loader contract, below). Loaders write rows past M or N and columns past the end of the
//   K slice as zeros (local padding), so the compute loop runs with no bounds checks at all;
//   only the final store to global memory is guarded.
// * STAGES: 1 = one shared buffer, load then compute; 2 = two shared buffers, the next tile
//   travels through registers while the current one is computed; 3-4 = cp.async multistage
//   (4-byte copies, because a copy may transpose into the k-major layout).
// * VEC: width of the register-staged global loads along an operand's contiguous dimension
//   (1, 2, 4 floats). A loader whose runtime row pitch is not a multiple of VEC falls back to
//   scalars (a block-uniform branch); code generation passes VEC=1 when a static pitch is not
//   a multiple. Pointers must be 4*VEC-byte aligned.
// * SPLITK > 1: each slice writes its raw partial sums to workspace[batch][SPLITK][M][N]; the
//   template's _reduce entry (split_k_reduce) adds the slices in a fixed order and applies
//   bias and activation, so results never depend on how blocks are scheduled.
// * PRELOAD: 1 = the fragments of k-row k+1 are loaded from shared memory while the FMAs of
//   row k run, across the k-tile boundary too: the last row's FMAs wait for nothing but the
//   barrier, and the first row of the next tile is already in registers when they are done.
//   cuBLAS's SIMT kernels do this. It costs registers (16 x 8 per thread on sm_90: 20 more
//   with cp.async, 32 more register staged). 0 = one k-tile at a time, each tile's first row
//   loaded after the barrier, so its FMAs wait for the shared loads.
// * MIN_BLOCKS: resident blocks per SM that ptxas must allow for, which caps registers per
//   thread at 64K / (MIN_BLOCKS * threads); the tuner decides whether occupancy or registers
//   win.
// * STATIC_M, STATIC_N, STATIC_K: GEMM extents known when the kernel is generated; the
//   arguments' m, n, k are ignored then.
// * Launch: grid (ceil(N/BN), min(ceil(M/BM), 65535), batch*SPLITK), WARPS_M*WARPS_N*32
//   threads, dynamic shared memory STAGES*BK*(LDA+LDB)*4 bytes. Blocks stride over M tiles
//   when the grid's y is clamped, so every M >= 1 is covered.
//
// Loader contract (ROWS = BM for A, BN for B; dst is a k-major [BK][LD] shared tile):
//   void begin_tile(int row0, int rows_left, int tid)   rows row0.. of this output tile exist
//                                                       up to rows_left (may be <= 0)
//   void fetch(int k0, int k_end, int tid)              STAGES 1-2: k-tile k0 into registers
//   void store(float* dst, int tid) const               STAGES 1-2: registers into dst
//   void copy_async(float* dst, int k0, int k_end, int tid)   STAGES 3-4: cp.async into dst
// Columns k >= k_end and rows >= rows_left must land as zeros.

// ---- Tunables (each has a default so a template compiles on its own) -----------------------
#ifndef WARPS_M
#define WARPS_M 4
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef THREADS_M
#define THREADS_M 4
#endif
#ifndef THREADS_N
#define THREADS_N (32 / THREADS_M)
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef BK
#define BK 8
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM ptxas must leave room for (caps registers per thread)
#endif
#ifndef PRELOAD
#define PRELOAD 0  // 1: the next k-row's fragments load while this one computes (STAGES >= 2)
#endif
#ifndef EPILOGUE
#define EPILOGUE 0  // 0 none, 1 bias, 2 relu, 3 bias_relu, 4 gelu (tanh form), 5 bias_gelu
#endif

#if THREADS_M * THREADS_N != 32
#error "THREADS_M * THREADS_N must be 32 (one warp)"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if BK % VEC != 0
#error "VEC must divide BK"
#endif
#if STAGES < 1 || STAGES > 4
#error "STAGES must be 1, 2, 3 or 4"
#endif
#if STAGES >= 3 && VEC != 1
#error \
    "cp.async stages copy 4-byte elements (they transpose into the k-major layout): VEC must be 1"
#endif
#if SPLITK < 1 || SPLITK > 16
#error "SPLITK must be in 1..16"
#endif
#if MIN_BLOCKS < 1 || MIN_BLOCKS > 4
#error "MIN_BLOCKS must be in 1..4"
#endif
#if PRELOAD != 0 && PRELOAD != 1
#error "PRELOAD must be 0 or 1"
#endif
#if PRELOAD && STAGES < 2
#error "PRELOAD needs a second buffer (STAGES >= 2): the next k-tile's rows are read across the barrier"
#endif
#if EPILOGUE < 0 || EPILOGUE > 5
#error "EPILOGUE must be in 0..5"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800 && STAGES >= 3
#error "cp.async (STAGES >= 3) needs sm_80 or newer"
#endif

#include "dietcode_activation.h"
#include "dietcode_extents.h"
#include "dietcode_splitk.h"

namespace dc {

constexpr int kThreads = WARPS_M * WARPS_N * 32;
constexpr int kSplitK = SPLITK;
constexpr int kBM = WARPS_M * THREADS_M * TM;
constexpr int kBN = WARPS_N * THREADS_N * TN;
// Fragment vector width: how many of a thread's TM (TN) values are adjacent in shared memory.
constexpr int kFM = TM % 4 == 0 ? 4 : (TM % 2 == 0 ? 2 : 1);
constexpr int kFN = TN % 4 == 0 ? 4 : (TN % 2 == 0 ? 2 : 1);

// Row pitch of a k-major tile: a multiple of 4 (vector reads stay aligned) that is 4 mod 8, so
// the lanes of a transposing store, which write several k-rows at once, hit different banks.
template <int kExtent>
struct PaddedPitch {
  static constexpr int kRounded = (kExtent + 3) / 4 * 4;
  static constexpr int value = kRounded % 8 == 0 ? kRounded + 4 : kRounded;
};
constexpr int kLDA = PaddedPitch<kBM>::value;
constexpr int kLDB = PaddedPitch<kBN>::value;
constexpr int kSmemBytes = STAGES * BK * (kLDA + kLDB) * 4;
static_assert(kSmemBytes > 0, "empty tile");

#ifdef DIETCODE_EXPECT_SMEM
static_assert(kSmemBytes == DIETCODE_EXPECT_SMEM, "launch plan disagrees on shared memory");
#endif
#ifdef DIETCODE_EXPECT_THREADS
static_assert(kThreads == DIETCODE_EXPECT_THREADS, "launch plan disagrees on threads");
#endif

// The batch element and K slice of this block: grid z is batch * SPLITK.
__device__ __forceinline__ int block_batch() { return blockIdx.z / SPLITK; }
__device__ __forceinline__ int block_split() { return blockIdx.z % SPLITK; }

// ---- Epilogue ----------------------------------------------------------------------------
__device__ __forceinline__ float apply_epilogue(float v, const float* __restrict__ bias, int n) {
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
  v += bias[n];
#endif
  return activate(v);
}

// ---- cp.async (sm_80+) ----------------------------------------------------------------------
// DIETCODE_HOST_EMULATION is a test double only: a CPU test compiles a template as C++ and runs
// each block's threads as host threads, with copies done synchronously.
#if !defined(DIETCODE_HOST_EMULATION)
__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
#endif

// Copies one float, or writes 0.0f when !valid (a source size of 0 reads nothing; src must
// still be a valid address, so callers pass the operand's base pointer then).
__device__ __forceinline__ void cp_async_f32(float* dst, const float* src, bool valid) {
#if defined(DIETCODE_HOST_EMULATION)
  *dst = valid ? *src : 0.0f;
#elif STAGES >= 3
  asm volatile(
      "{ .reg .u64 g; cvta.to.global.u64 g, %1; cp.async.ca.shared.global [%0], [g], 4, %2; }\n" ::
          "r"(shared_address(dst)),
      "l"(src), "r"(valid ? 4 : 0)
      : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if !defined(DIETCODE_HOST_EMULATION) && STAGES >= 3
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(DIETCODE_HOST_EMULATION) && STAGES >= 3
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Vector global loads of F floats (F = 1, 2, 4) into out[0..F).
template <int F>
__device__ __forceinline__ void load_vector(const float* p, float* out) {
  if (F == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    out[0] = t.x;
    out[F > 1 ? 1 : 0] = t.y;
    out[F > 2 ? 2 : 0] = t.z;
    out[F > 3 ? 3 : 0] = t.w;
  } else if (F == 2) {
    const float2 t = *reinterpret_cast<const float2*>(p);
    out[0] = t.x;
    out[F > 1 ? 1 : 0] = t.y;
  } else {
    out[0] = *p;
  }
}

// How a block's threads walk a ROWS x BK tile of an operand whose rows are K-contiguous in
// global memory: consecutive lanes take consecutive CHUNK-wide pieces of a row, so a warp's
// loads are coalesced along K. A block's thread count is a multiple of 32 and a row holds at
// most 32 chunks, so each thread keeps one K offset and visits rows kRowStep apart.
template <int ROWS, int CHUNK>
struct TileWalk {
  static constexpr int kChunksPerRow = BK / CHUNK;
  static_assert(kThreads % kChunksPerRow == 0, "a row's chunks must divide the block");
  static constexpr int kRowStep = kThreads / kChunksPerRow;
  static constexpr int kIters = (ROWS + kRowStep - 1) / kRowStep;
  // Whether iteration i exists for a thread whose first row is r0.
  static __device__ __forceinline__ bool in_tile(int i, int r0) {
    return ROWS % kRowStep == 0 || r0 + i * kRowStep < ROWS;
  }
};

// The chunk width of the K-contiguous walks: VEC for register staging, 1 for cp.async.
constexpr int kWalkChunk = STAGES >= 3 ? 1 : VEC;

// Registers of a K-contiguous staged tile into the k-major shared tile (a transposing store).
template <int ROWS, int LD, int ITERS>
__device__ __forceinline__ void store_k_rows(const float (&reg)[ITERS][VEC], float* dst, int tid) {
  using Walk = TileWalk<ROWS, VEC>;
  const int r0 = tid / Walk::kChunksPerRow;
  float* d = dst + (tid % Walk::kChunksPerRow) * VEC * LD + r0;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    if (!Walk::in_tile(i, r0)) continue;
#pragma unroll
    for (int e = 0; e < VEC; ++e) d[e * LD + i * Walk::kRowStep] = reg[i][e];
  }
}

// ---- Compute -------------------------------------------------------------------------------
// A thread's fragments of k-row k of a staged tile pair. a_off/b_off: this thread's first
// column in the k-rows of As/Bs.
__device__ __forceinline__ void load_fragments(const float* As, const float* Bs, int k, int a_off,
                                               int b_off, float (&a)[TM], float (&b)[TN]) {
#pragma unroll
  for (int g = 0; g < TM / kFM; ++g)
    load_vector<kFM>(As + k * kLDA + a_off + g * THREADS_M * kFM, a + g * kFM);
#pragma unroll
  for (int g = 0; g < TN / kFN; ++g)
    load_vector<kFN>(Bs + k * kLDB + b_off + g * THREADS_N * kFN, b + g * kFN);
}

__device__ __forceinline__ void outer_product(const float (&a)[TM], const float (&b)[TN],
                                              float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// One BK-deep step on a staged tile pair. No bounds checks: padding rows and columns hold zeros.
__device__ __forceinline__ void compute_tile(const float* As, const float* Bs, int a_off, int b_off,
                                             float (&acc)[TM][TN]) {
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    float a[TM], b[TN];
    load_fragments(As, Bs, k, a_off, b_off, a, b);
    outer_product(a, b, acc);
  }
}

// The same step with PRELOAD: frag_a/frag_b[0] hold row 0 on entry. Rows 1..BK-1 load while the
// row before computes; before the last row's FMAs, next_tile() runs (it ends with the barrier
// that makes the next k-tile visible) and the next tile's row 0 loads from next_As/next_Bs
// (null on the last tile) into slot 0, which BK being even leaves free.
template <class NextTile>
__device__ __forceinline__ void compute_tile_preloaded(const float* As, const float* Bs,
                                                       const float* next_As, const float* next_Bs,
                                                       int a_off, int b_off, float (&frag_a)[2][TM],
                                                       float (&frag_b)[2][TN], float (&acc)[TM][TN],
                                                       NextTile next_tile) {
  static_assert(BK % 2 == 0, "PRELOAD alternates two fragment slots per k-tile");
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    if (k + 1 < BK) {
      load_fragments(As, Bs, k + 1, a_off, b_off, frag_a[(k + 1) & 1], frag_b[(k + 1) & 1]);
    } else {
      next_tile();
      if (next_As) load_fragments(next_As, next_Bs, 0, a_off, b_off, frag_a[0], frag_b[0]);
    }
    outer_product(frag_a[k & 1], frag_b[k & 1], acc);
  }
}

// Offset of a thread's i-th value inside its warp's THREADS*T span: groups of F adjacent values,
// THREADS*F apart, so a warp's vector read covers one contiguous run.
template <int THREADS, int F>
__device__ __forceinline__ int fragment_offset(int i, int lane_pos) {
  return (i / F) * THREADS * F + lane_pos * F + i % F;
}

// The main loop for one output tile: acc += A[tile rows, slice] . B[tile columns, slice]^T.
template <class TileA, class TileB>
__device__ __forceinline__ void mainloop(TileA& ta, TileB& tb, const KSlice& s, float* smem,
                                         int tid, int a_off, int b_off, float (&acc)[TM][TN]) {
  float* As = smem;
  float* Bs = smem + STAGES * BK * kLDA;
  // Each pipeline's PRELOAD loop is written out beside the plain one rather than sharing its
  // prologue and copy helpers with it: folding them together changed ptxas's register
  // allocation of the plain loops, which were measured on GPUs as they are (a batch_matmul
  // kernel at 254 registers began to spill).
#if STAGES >= 3 && PRELOAD
  // Tile t+STAGES-1 is copied into tile t-1's buffer at the top of iteration t: every thread
  // read its last fragments of tile t-1 before the barrier that ended iteration t-1.
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < s.num_tiles) {
      const int k0 = s.begin + st * BK;
      ta.copy_async(As + st * BK * kLDA, k0, s.end, tid);
      tb.copy_async(Bs + st * BK * kLDB, k0, s.end, tid);
    }
    cp_async_commit();
  }
  if (s.num_tiles <= 0) {
    cp_async_wait<0>();
    return;
  }
  float frag_a[2][TM], frag_b[2][TN];
  cp_async_wait<STAGES - 2>();
  __syncthreads();
  load_fragments(As, Bs, 0, a_off, b_off, frag_a[0], frag_b[0]);
  int read_stage = 0;
  int write_stage = STAGES - 1;
#pragma unroll 1
  for (int t = 0; t < s.num_tiles; ++t) {
    const int next = t + STAGES - 1;
    if (next < s.num_tiles) {
      const int k0 = s.begin + next * BK;
      ta.copy_async(As + write_stage * BK * kLDA, k0, s.end, tid);
      tb.copy_async(Bs + write_stage * BK * kLDB, k0, s.end, tid);
    }
    cp_async_commit();
    const int next_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
    const bool more = t + 1 < s.num_tiles;
    compute_tile_preloaded(
        As + read_stage * BK * kLDA, Bs + read_stage * BK * kLDB,
        more ? As + next_stage * BK * kLDA : nullptr, Bs + next_stage * BK * kLDB, a_off, b_off,
        frag_a, frag_b, acc, [] {
          cp_async_wait<STAGES - 2>();  // this thread's copies of tile t+1 have landed
          __syncthreads();              // everyone's have, and nobody reads tile t any more
        });
    read_stage = next_stage;
    write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();
#elif STAGES >= 3
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < s.num_tiles) {
      const int k0 = s.begin + st * BK;
      ta.copy_async(As + st * BK * kLDA, k0, s.end, tid);
      tb.copy_async(Bs + st * BK * kLDB, k0, s.end, tid);
    }
    cp_async_commit();  // empty groups keep the wait count below uniform
  }
  int read_stage = 0;
  int write_stage = STAGES - 1;
#pragma unroll 1
  for (int t = 0; t < s.num_tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
    __syncthreads();              // everyone's have; and tile t-1's buffer is free
    const int next = t + STAGES - 1;
    if (next < s.num_tiles) {
      const int k0 = s.begin + next * BK;
      ta.copy_async(As + write_stage * BK * kLDA, k0, s.end, tid);
      tb.copy_async(Bs + write_stage * BK * kLDB, k0, s.end, tid);
    }
    cp_async_commit();
    compute_tile(As + read_stage * BK * kLDA, Bs + read_stage * BK * kLDB, a_off, b_off, acc);
    read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();
#elif STAGES == 2 && PRELOAD
  if (s.num_tiles <= 0) return;
  ta.fetch(s.begin, s.end, tid);
  tb.fetch(s.begin, s.end, tid);
  ta.store(As, tid);
  tb.store(Bs, tid);
  __syncthreads();
  float frag_a[2][TM], frag_b[2][TN];
  load_fragments(As, Bs, 0, a_off, b_off, frag_a[0], frag_b[0]);
#pragma unroll 1
  for (int t = 0; t < s.num_tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < s.num_tiles;
    if (more) {  // in flight while this tile is computed
      const int k0 = s.begin + (t + 1) * BK;
      ta.fetch(k0, s.end, tid);
      tb.fetch(k0, s.end, tid);
    }
    float* next_As = As + (cur ^ 1) * BK * kLDA;
    float* next_Bs = Bs + (cur ^ 1) * BK * kLDB;
    // The other buffer was last read (tile t-1's last row) before the previous barrier.
    compute_tile_preloaded(As + cur * BK * kLDA, Bs + cur * BK * kLDB, more ? next_As : nullptr,
                           next_Bs, a_off, b_off, frag_a, frag_b, acc, [&] {
                             if (more) {
                               ta.store(next_As, tid);
                               tb.store(next_Bs, tid);
                             }
                             __syncthreads();
                           });
  }
#elif STAGES == 2
  if (s.num_tiles > 0) {
    ta.fetch(s.begin, s.end, tid);
    tb.fetch(s.begin, s.end, tid);
    ta.store(As, tid);
    tb.store(Bs, tid);
    __syncthreads();
  }
#pragma unroll 1
  for (int t = 0; t < s.num_tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < s.num_tiles;
    if (more) {  // in flight while this tile is computed
      const int k0 = s.begin + (t + 1) * BK;
      ta.fetch(k0, s.end, tid);
      tb.fetch(k0, s.end, tid);
    }
    compute_tile(As + cur * BK * kLDA, Bs + cur * BK * kLDB, a_off, b_off, acc);
    if (more) {  // the other buffer was last read before the previous barrier
      ta.store(As + (cur ^ 1) * BK * kLDA, tid);
      tb.store(Bs + (cur ^ 1) * BK * kLDB, tid);
    }
    __syncthreads();
  }
#else
#pragma unroll 1
  for (int t = 0; t < s.num_tiles; ++t) {
    const int k0 = s.begin + t * BK;
    ta.fetch(k0, s.end, tid);
    tb.fetch(k0, s.end, tid);
    ta.store(As, tid);
    tb.store(Bs, tid);
    __syncthreads();
    compute_tile(As, Bs, a_off, b_off, acc);
    __syncthreads();
  }
#endif
}

// One block's whole job: every M tile of its column of tiles (blocks stride over M tiles when
// the grid's y is clamped), each through mainloop, then the guarded store with the epilogue
// (or raw partial sums into the split-K workspace). ta and tb already point at this block's
// batch element; smem is the kernel's dynamic shared memory (declared by the extern "C"
// entry, whose linkage it must share).
template <class TileA, class TileB>
__device__ __forceinline__ void gemm_block(const DietcodeArgs& args, float* smem, int m, int n,
                                           int k, TileA& ta, TileB& tb) {
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int lane_m = lane / THREADS_N, lane_n = lane % THREADS_N;
  const int a_off = warp_m * (THREADS_M * TM) + lane_m * kFM;
  const int b_off = warp_n * (THREADS_N * TN) + lane_n * kFN;

  const int batch = block_batch();
  const int split = block_split();
  const KSlice slice = k_slice<BK, SPLITK>(k, split);
  const int n0 = blockIdx.x * kBN;
  tb.begin_tile(n0, n - n0, tid);

  const float* bias = static_cast<const float*>(args.bias);
  float* out =
      SPLITK > 1 ? static_cast<float*>(args.workspace) + (long long)(batch * SPLITK + split) * m * n
                 : static_cast<float*>(args.c) + batch * args.stride_c;

  const int m_tiles = (m + kBM - 1) / kBM;
  for (int mt = blockIdx.y; mt < m_tiles; mt += gridDim.y) {
    const int m0 = mt * kBM;
    ta.begin_tile(m0, m - m0, tid);
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    mainloop(ta, tb, slice, smem, tid, a_off, b_off, acc);

    // Only the store is guarded: padding rows and columns are dropped here.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = m0 + warp_m * (THREADS_M * TM) + fragment_offset<THREADS_M, kFM>(i, lane_m);
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int col = n0 + warp_n * (THREADS_N * TN) + fragment_offset<THREADS_N, kFN>(j, lane_n);
        if (col >= n) continue;
        const float v = SPLITK > 1 ? acc[i][j] : apply_epilogue(acc[i][j], bias, col);
        out[(long long)row * n + col] = v;
      }
    }
    __syncthreads();  // the next M tile reuses shared memory
  }
}

// Split-K reduction: C = epilogue(sum over slices in slice order); launched only when
// SPLITK > 1. The summing loop is shared with every template (dietcode_splitk.h).
__device__ __forceinline__ void split_k_reduce(const DietcodeArgs& args) {
  const float* bias = static_cast<const float*>(args.bias);
  float* c = static_cast<float*>(args.c);
  reduce_split_k<SPLITK>(args, extent_m(args), extent_n(args),
                         [&](long long offset, int col, float sum) {
                           c[offset] = apply_epilogue(sum, bias, col);
                         });
}

}  // namespace dc
