// dense_f32: Y[M,N] = epilogue(X[M,K] . W[N,K]^T (+ bias[N])) in fp32 SIMT FMA.
// Compiled by NVRTC only: no host headers, cp.async through inline PTX.
//
// Guided tour
// * A block computes one BM x BN tile of Y, BM = WARPS_M*THREADS_M*TM and
//   BN = WARPS_N*THREADS_N*TN, over all of K or over one of SPLITK slices of it.
// * Both operands are K-contiguous in global memory. Tiles are kept in shared memory k-major
//   (As[k][m], Bs[k][n]) so that for one k a thread reads its TM (TN) values as float4/float2
//   vectors: TM/FM + TN/FN shared loads feed TM*TN FMAs, and only TM+TN fragment registers are
//   live per k. A warp's vector read touches THREADS_M (THREADS_N) contiguous chunks of one
//   k-row, which is free of bank conflicts. The row pitch is padded to 4 (mod 8) floats to
//   spread the transposing stores over the banks.
// * Local padding: rows past M or N and columns past the end of the K slice are written to
//   shared memory as zeros while a tile is loaded (cp.async with a source size of 0, or a
//   predicated register load), so the compute loop runs with no bounds checks at all; only
//   the final store to global memory is guarded.
// * STAGES: 1 = one shared buffer, load then compute; 2 = two shared buffers, the next tile
//   travels through registers while the current one is computed; 3-4 = cp.async multistage
//   (4-byte copies, because the copy itself transposes into the k-major layout).
// * VEC: width of the register-staged global loads along K (1, 2, 4 floats). When the runtime
//   K is not a multiple of VEC the loads fall back to scalars (a block-uniform branch); with a
//   static K code generation passes VEC=1 instead. Pointers must be 4*VEC-byte aligned.
// * SPLITK > 1: each slice writes its raw partial sums to workspace[batch][SPLITK][M][N];
//   dietcode_dense_f32_reduce then adds the slices in a fixed order and applies bias and
//   activation, so results never depend on how blocks are scheduled.
// * MIN_BLOCKS: resident blocks per SM that ptxas must allow for, which caps registers per
//   thread at 64K / (MIN_BLOCKS * threads); the tuner decides whether occupancy or registers
//   win.
// * Launch: grid (ceil(N/BN), min(ceil(M/BM), 65535), batch*SPLITK), WARPS_M*WARPS_N*32
//   threads, dynamic shared memory STAGES*BK*(LDA+LDB)*4 bytes. Blocks stride over M tiles
//   when the grid's y is clamped, so every M >= 1 is covered.

#include "dietcode_args.h"

// ---- Tunables (each has a default so the file compiles on its own) ------------------------
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
#if EPILOGUE < 0 || EPILOGUE > 5
#error "EPILOGUE must be in 0..5"
#endif
#if defined(STATIC_K) && (STATIC_K % VEC != 0)
#error "STATIC_K must be a multiple of VEC (code generation passes VEC=1 otherwise)"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800 && STAGES >= 3
#error "cp.async (STAGES >= 3) needs sm_80 or newer"
#endif

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

// ---- Epilogue ----------------------------------------------------------------------------
__device__ __forceinline__ float apply_epilogue(float v, const float* __restrict__ bias, int n) {
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
  v += bias[n];
#endif
#if EPILOGUE == 2 || EPILOGUE == 3
  v = fmaxf(v, 0.0f);
#elif EPILOGUE == 4 || EPILOGUE == 5
  v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
  return v;
}

// ---- cp.async (sm_80+) ----------------------------------------------------------------------
// DIETCODE_HOST_EMULATION is a test double only: a CPU test compiles this file as C++ and runs
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

// ---- Global -> shared tile loaders ---------------------------------------------------------
// A tile is ROWS x BK of a K-contiguous operand (row pitch ld = K); it lands k-major in
// dst[BK][LD]. Rows >= rows and columns >= k_end become zeros (local padding).
//
// Work split: consecutive lanes take consecutive chunks of a row, so a warp's loads are
// coalesced along K. A block's thread count is a multiple of 32 and a row holds at most
// 32 chunks, so each thread keeps one K offset and visits rows kRowStep apart; its
// addresses are one base pointer plus a running row stride. (Precomputing one 64-bit
// address per chunk made ptxas hoist them all and spill.)
template <int ROWS, int LD, int CHUNK>
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

// Register-staged loader (STAGES 1 and 2).
template <int ROWS, int LD>
struct StagedTile {
  using Walk = TileWalk<ROWS, LD, VEC>;
  float reg[Walk::kIters][VEC];

  // rows_left = rows - row0: how many rows of this tile exist.
  __device__ __forceinline__ void fetch(const float* __restrict__ src, long long row0,
                                        int rows_left, int ld, int k0, int k_end, bool vec_ok,
                                        int tid) {
    const int r0 = tid / Walk::kChunksPerRow;
    const int gk = k0 + (tid % Walk::kChunksPerRow) * VEC;
    const long long stride = (long long)Walk::kRowStep * ld;
    const float* p = src + (row0 + r0) * ld + gk;
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i, p += stride) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) reg[i][e] = 0.0f;
      const int r = r0 + i * Walk::kRowStep;
      if (!Walk::in_tile(i, r0) || r >= rows_left) continue;
      if (VEC == 1 || vec_ok) {
        // K % VEC == 0 and slices end on multiples of BK: a chunk is all in or all out.
        if (gk < k_end) {
          if (VEC == 4) {
            const float4 t = *reinterpret_cast<const float4*>(p);
            reg[i][0] = t.x;
            reg[i][VEC > 1 ? 1 : 0] = t.y;
            reg[i][VEC > 2 ? 2 : 0] = t.z;
            reg[i][VEC > 3 ? 3 : 0] = t.w;
          } else if (VEC == 2) {
            const float2 t = *reinterpret_cast<const float2*>(p);
            reg[i][0] = t.x;
            reg[i][VEC > 1 ? 1 : 0] = t.y;
          } else {
            reg[i][0] = *p;
          }
        }
      } else {
        // A runtime K that is not a multiple of VEC: rows are not vector-aligned.
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          if (gk + e < k_end) reg[i][e] = p[e];
      }
    }
  }

  __device__ __forceinline__ void store(float* dst, int tid) const {
    const int r0 = tid / Walk::kChunksPerRow;
    float* d = dst + (tid % Walk::kChunksPerRow) * VEC * LD + r0;
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i) {
      if (!Walk::in_tile(i, r0)) continue;
#pragma unroll
      for (int e = 0; e < VEC; ++e) d[e * LD + i * Walk::kRowStep] = reg[i][e];
    }
  }
};

// cp.async loader (STAGES 3 and 4): one 4-byte copy per element.
template <int ROWS, int LD>
__device__ __forceinline__ void async_tile(float* dst, const float* __restrict__ src,
                                           long long row0, int rows_left, int ld, int k0, int k_end,
                                           int tid) {
  using Walk = TileWalk<ROWS, LD, 1>;
  const int r0 = tid / BK;
  const int k = tid % BK;
  const bool k_ok = k0 + k < k_end;
  const long long stride = (long long)Walk::kRowStep * ld;
  const float* p = src + (row0 + r0) * ld + k0 + k;
  float* d = dst + k * LD + r0;
#pragma unroll
  for (int i = 0; i < Walk::kIters; ++i, p += stride) {
    const int r = r0 + i * Walk::kRowStep;
    if (!Walk::in_tile(i, r0)) continue;
    const bool valid = k_ok && r < rows_left;
    cp_async_f32(d + i * Walk::kRowStep, valid ? p : src, valid);
  }
}

// ---- Compute -------------------------------------------------------------------------------
template <int F>
__device__ __forceinline__ void load_fragment(const float* p, float* out) {
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

// One BK-deep step on a staged tile pair. a_off/b_off: this thread's first column in the
// k-rows of As/Bs. No bounds checks: padding rows and columns hold zeros.
__device__ __forceinline__ void compute_tile(const float* As, const float* Bs, int a_off, int b_off,
                                             float (&acc)[TM][TN]) {
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    float a[TM], b[TN];
#pragma unroll
    for (int g = 0; g < TM / kFM; ++g)
      load_fragment<kFM>(As + k * kLDA + a_off + g * THREADS_M * kFM, a + g * kFM);
#pragma unroll
    for (int g = 0; g < TN / kFN; ++g)
      load_fragment<kFN>(Bs + k * kLDB + b_off + g * THREADS_N * kFN, b + g * kFN);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// Offset of a thread's i-th value inside its warp's THREADS*T span: groups of F adjacent values,
// THREADS*F apart, so a warp's vector read covers one contiguous run.
template <int THREADS, int F>
__device__ __forceinline__ int fragment_offset(int i, int lane_pos) {
  return (i / F) * THREADS * F + lane_pos * F + i % F;
}

struct Problem {
  const float* a;      // X rows of this batch element
  const float* b;      // W rows
  int k;               // row pitch of both operands (a compile-time constant when STATIC_K)
  int m0, n0;          // tile origin
  int m_left, n_left;  // rows of X and W from the tile origin on
  int k_begin, k_end, num_tiles;
};

// The main loop for one output tile: acc += A[m0:m0+BM, slice] . B[n0:n0+BN, slice]^T.
__device__ __forceinline__ void mainloop(const Problem& p, float* smem, int tid, int a_off,
                                         int b_off, bool vec_ok, float (&acc)[TM][TN]) {
  float* As = smem;
  float* Bs = smem + STAGES * BK * kLDA;
#if STAGES >= 3
  (void)vec_ok;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < p.num_tiles) {
      const int k0 = p.k_begin + s * BK;
      async_tile<kBM, kLDA>(As + s * BK * kLDA, p.a, p.m0, p.m_left, p.k, k0, p.k_end, tid);
      async_tile<kBN, kLDB>(Bs + s * BK * kLDB, p.b, p.n0, p.n_left, p.k, k0, p.k_end, tid);
    }
    cp_async_commit();  // empty groups keep the wait count below uniform
  }
  int read_stage = 0;
  int write_stage = STAGES - 1;
#pragma unroll 1
  for (int t = 0; t < p.num_tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
    __syncthreads();              // everyone's have; and tile t-1's buffer is free
    const int next = t + STAGES - 1;
    if (next < p.num_tiles) {
      const int k0 = p.k_begin + next * BK;
      async_tile<kBM, kLDA>(As + write_stage * BK * kLDA, p.a, p.m0, p.m_left, p.k, k0, p.k_end,
                            tid);
      async_tile<kBN, kLDB>(Bs + write_stage * BK * kLDB, p.b, p.n0, p.n_left, p.k, k0, p.k_end,
                            tid);
    }
    cp_async_commit();
    compute_tile(As + read_stage * BK * kLDA, Bs + read_stage * BK * kLDB, a_off, b_off, acc);
    read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();
#elif STAGES == 2
  StagedTile<kBM, kLDA> ta;
  StagedTile<kBN, kLDB> tb;
  if (p.num_tiles > 0) {
    ta.fetch(p.a, p.m0, p.m_left, p.k, p.k_begin, p.k_end, vec_ok, tid);
    tb.fetch(p.b, p.n0, p.n_left, p.k, p.k_begin, p.k_end, vec_ok, tid);
    ta.store(As, tid);
    tb.store(Bs, tid);
    __syncthreads();
  }
#pragma unroll 1
  for (int t = 0; t < p.num_tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < p.num_tiles;
    if (more) {  // in flight while this tile is computed
      const int k0 = p.k_begin + (t + 1) * BK;
      ta.fetch(p.a, p.m0, p.m_left, p.k, k0, p.k_end, vec_ok, tid);
      tb.fetch(p.b, p.n0, p.n_left, p.k, k0, p.k_end, vec_ok, tid);
    }
    compute_tile(As + cur * BK * kLDA, Bs + cur * BK * kLDB, a_off, b_off, acc);
    if (more) {  // the other buffer was last read before the previous barrier
      ta.store(As + (cur ^ 1) * BK * kLDA, tid);
      tb.store(Bs + (cur ^ 1) * BK * kLDB, tid);
    }
    __syncthreads();
  }
#else
  StagedTile<kBM, kLDA> ta;
  StagedTile<kBN, kLDB> tb;
#pragma unroll 1
  for (int t = 0; t < p.num_tiles; ++t) {
    const int k0 = p.k_begin + t * BK;
    ta.fetch(p.a, p.m0, p.m_left, p.k, k0, p.k_end, vec_ok, tid);
    tb.fetch(p.b, p.n0, p.n_left, p.k, k0, p.k_end, vec_ok, tid);
    ta.store(As, tid);
    tb.store(Bs, tid);
    __syncthreads();
    compute_tile(As, Bs, a_off, b_off, acc);
    __syncthreads();
  }
#endif
}

}  // namespace dc

extern "C" __global__ void __launch_bounds__(dc::kThreads, MIN_BLOCKS)
    dietcode_dense_f32(DietcodeArgs args) {
  using namespace dc;
  extern __shared__ float4 dc_smem[];  // float4: 16-byte alignment for the vector reads
  float* smem = reinterpret_cast<float*>(dc_smem);

  const int m = (int)args.m;
#ifdef STATIC_N
  constexpr int n = STATIC_N;
#else
  const int n = (int)args.n;
#endif
#ifdef STATIC_K
  constexpr int k = STATIC_K;
  constexpr bool vec_ok = true;
#else
  const int k = (int)args.k;
  const bool vec_ok = k % VEC == 0;
#endif

  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int lane_m = lane / THREADS_N, lane_n = lane % THREADS_N;
  const int a_off = warp_m * (THREADS_M * TM) + lane_m * kFM;
  const int b_off = warp_n * (THREADS_N * TN) + lane_n * kFN;

  const int batch = blockIdx.z / SPLITK;
  const int split = blockIdx.z % SPLITK;

  Problem p;
  p.a = static_cast<const float*>(args.a) + batch * args.stride_a;
  p.b = static_cast<const float*>(args.b) + batch * args.stride_b;
  p.k = k;
  p.n0 = blockIdx.x * kBN;
  p.n_left = n - p.n0;
  // The K slice of this split, in whole BK tiles; trailing splits may be empty.
  const int k_tiles = (k + BK - 1) / BK;
  const int tiles_per_split = (k_tiles + SPLITK - 1) / SPLITK;
  p.k_begin = split * tiles_per_split * BK;
  p.k_end = min(k, p.k_begin + tiles_per_split * BK);
  p.num_tiles = p.k_begin < k ? (p.k_end - p.k_begin + BK - 1) / BK : 0;

  const float* bias = static_cast<const float*>(args.bias);
  float* out =
      SPLITK > 1 ? static_cast<float*>(args.workspace) + (long long)(batch * SPLITK + split) * m * n
                 : static_cast<float*>(args.c) + batch * args.stride_c;

  const int m_tiles = (m + kBM - 1) / kBM;
  for (int mt = blockIdx.y; mt < m_tiles; mt += gridDim.y) {
    p.m0 = mt * kBM;
    p.m_left = m - p.m0;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    mainloop(p, smem, tid, a_off, b_off, vec_ok, acc);

    // Only the store is guarded: padding rows and columns are dropped here.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = p.m0 + warp_m * (THREADS_M * TM) + fragment_offset<THREADS_M, kFM>(i, lane_m);
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int col =
            p.n0 + warp_n * (THREADS_N * TN) + fragment_offset<THREADS_N, kFN>(j, lane_n);
        if (col >= n) continue;
        const float v = SPLITK > 1 ? acc[i][j] : apply_epilogue(acc[i][j], bias, col);
        out[(long long)row * n + col] = v;
      }
    }
    __syncthreads();  // the next M tile reuses shared memory
  }
}

// Split-K reduction: Y = epilogue(sum over slices in slice order). Each block covers
// 4 * blockDim.x consecutive outputs; launched only when SPLITK > 1.
extern "C" __global__ void __launch_bounds__(256) dietcode_dense_f32_reduce(DietcodeArgs args) {
  const long long m = args.m;
#ifdef STATIC_N
  constexpr long long n = STATIC_N;
#else
  const long long n = args.n;
#endif
  const long long mn = m * n;
  const long long total = args.batch * mn;
  const float* ws = static_cast<const float*>(args.workspace);
  const float* bias = static_cast<const float*>(args.bias);
  float* c = static_cast<float*>(args.c);
  const long long first = (long long)blockIdx.x * blockDim.x * 4 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const long long e = first + (long long)j * blockDim.x;
    if (e >= total) return;
    const long long batch = e / mn;
    const long long r = e - batch * mn;
    const float* slice = ws + batch * SPLITK * mn + r;
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < SPLITK; ++s) sum += slice[s * mn];  // fixed order: deterministic
    c[batch * args.stride_c + r] = dc::apply_epilogue(sum, bias, (int)(r % n));
  }
}
