// dense_tc: Y[M,N] = epilogue(X[M,K] . W[N,K]^T (+ bias[N])) on tensor cores, for f16 and bf16
// (DTYPE 1, 2) with fp32 accumulation and the output rounded to the input type. sm_80+.
// Also batch_matmul Y[b] = A[b] . B[b]: batch element b = blockIdx.z / SPLITK starts at
// a + b*stride_a, b + b*stride_b, c + b*stride_c, with A stored [M,K] and B stored [N,K]
// (B_K_CONTIGUOUS 1, read like W) or [K,N] (B_K_CONTIGUOUS 0, see below).
// Compiled by NVRTC only: no CUDA headers, PTX through inline asm (dietcode_tc.h).
//
// Guided tour
// * A block computes one BM x BN tile of Y: WARPS_M x WARPS_N warps, each a WM x WN warp tile
//   (WM a multiple of 16, WN of 8) made of (WM/16) x (WN/8) mma.sync.m16n8k16 tiles, whose fp32
//   accumulators stay in registers for the whole K loop.
// * Both operands are K-contiguous (X rows, W rows), which is exactly what mma wants for A
//   ("row") and B ("col"), so ldmatrix needs no .trans for them. Tiles live in shared memory as
//   [rows][BK] with 16-byte chunks XOR-swizzled by row (swizzle() below): the 8 rows one
//   ldmatrix phase reads fall into 8 different 16-byte bank groups, so reads are conflict-free,
//   and the cp.async writes of a warp spread over the banks too.
// * B stored [K,N] (B_K_CONTIGUOUS 0, attention's probs . V): B tiles are [BK][BN], copied
//   along N, and ldmatrix .trans turns 8 k-rows of 8 n-columns into mma's column-major B
//   fragment. Their chunks are swizzled within each row (swizzle_kn()). 16-byte copies need
//   N % 8 == 0 here; otherwise B's tiles take guarded 2-byte loads, as for K below.
// * STAGES (2-4) shared buffers form a cp.async pipeline: while tile t is computed, tiles
//   t+1 .. t+STAGES-1 are in flight (16-byte cp.async.cg, one commit group per tile).
// * Local padding: rows past M (N) and chunks past the end of the K slice are zero-filled by the
//   copy itself (cp.async with a source size of 0), so the compute loop has no bounds checks;
//   only the final stores are guarded.
// * K must be a multiple of 8 for 16-byte copies (rows then start on 16-byte boundaries and a
//   chunk is wholly inside or outside K). Otherwise the tiles are loaded with guarded 2-byte
//   loads and written to shared memory synchronously (a block-uniform branch on the runtime K,
//   or the only path when a static K is not a multiple of 8): slower, but any K works.
// * SPLITK > 1: slice s of K writes raw fp32 sums to workspace[batch][SPLITK][M][N];
//   dietcode_dense_tc_reduce adds the slices in a fixed order, applies bias and activation and
//   rounds to the element type, so results never depend on block scheduling.
// * Stores: an mma accumulator holds two adjacent columns, written as one packed 32-bit
//   (half2 / bfloat162) store when the row pitch N is even, else as two 16-bit stores.
// * Launch: grid (ceil(N/BN), min(ceil(M/BM), 65535), batch*SPLITK), WARPS_M*WARPS_N*32
//   threads, STAGES*(BM+BN)*BK*2 bytes of dynamic shared memory; X, W, Y 16-byte aligned.
//   Blocks stride over M tiles when the grid's y is clamped, so every M >= 1 is covered.

#include "dietcode_args.h"
#include "dietcode_tc.h"

// ---- Tunables (each has a default so the file compiles on its own) ------------------------
// DTYPE, EPILOGUE and SPLITK, which both tensor-core templates take, are in dietcode_tc.h.
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef WM
#define WM 64  // warp tile rows, a multiple of 16
#endif
#ifndef WN
#define WN 32  // warp tile columns, a multiple of 8
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// How B is stored (not a tunable: the op's layout). 1: K-contiguous, W[N,K] of a dense layer or
// B[b] stored [N,K] (batch_matmul transpose_b). 0: N-contiguous, B[b] stored [K,N].
#ifndef B_K_CONTIGUOUS
#define B_K_CONTIGUOUS 1
#endif

#if WM % 16 != 0 || WM < 16 || WM > 128
#error "WM must be a multiple of 16 in 16..128"
#endif
#if WN % 8 != 0 || WN < 8 || WN > 128
#error "WN must be a multiple of 8 in 8..128"
#endif
#if BK != 32 && BK != 64
#error "BK must be 32 or 64"
#endif
#if STAGES < 2 || STAGES > 4
#error "STAGES must be 2, 3 or 4"
#endif
#if MIN_BLOCKS < 1 || MIN_BLOCKS > 4
#error "MIN_BLOCKS must be in 1..4"
#endif
#if B_K_CONTIGUOUS != 0 && B_K_CONTIGUOUS != 1
#error "B_K_CONTIGUOUS must be 0 or 1"
#endif

namespace dc {

constexpr int kThreads = WARPS_M * WARPS_N * 32;
constexpr int kSplitK = SPLITK;
constexpr int kBM = WARPS_M * WM;
constexpr int kBN = WARPS_N * WN;
constexpr int kMmaM = WM / 16;         // mma tiles of a warp along M
constexpr int kMmaN = WN / 8;          // ... along N
constexpr int kChunksPerRow = BK / 8;  // 16-byte chunks in one tile row
constexpr int kStageA = kBM * BK;      // elements of one A (X) stage
constexpr int kStageB = kBN * BK;      // elements of one B (W) stage
constexpr int kSmemBytes = STAGES * (kStageA + kStageB) * 2;
constexpr int kChunksN = kBN / 8;  // 16-byte chunks in one row of a [BK][BN] B tile
static_assert(kThreads <= 1024, "too many threads");

#ifdef DIETCODE_EXPECT_SMEM
static_assert(kSmemBytes == DIETCODE_EXPECT_SMEM, "launch plan disagrees on shared memory");
#endif
#ifdef DIETCODE_EXPECT_THREADS
static_assert(kThreads == DIETCODE_EXPECT_THREADS, "launch plan disagrees on threads");
#endif

// The swizzle phase of a row: 128-byte rows (BK 64) XOR their 8 chunks with row % 8; 64-byte
// rows (BK 32) pair up into 128-byte lines and XOR their 4 chunks with (row / 2) % 4. Either
// way 8 consecutive rows at one logical chunk land in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int swizzle_phase(int row) {
  return (BK == 64 ? row : row >> 1) & (kChunksPerRow - 1);
}
// Element offset of (row, chunk) in a [rows][BK] tile.
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * BK + ((chunk ^ swizzle_phase(row)) << 3);
}

// B stored [K,N] lives in shared memory as [BK][BN], rows of kChunksN chunks. Its swizzle XORs
// a chunk with a phase below g, the largest power of two (at most 8) dividing kChunksN, so a
// chunk stays in its row; 8 consecutive rows at one logical chunk still land in 8 distinct bank
// groups (for g < 8 the row pitch itself spreads what the phase does not: an odd kChunksN, or
// twice an odd one with phases alternating every 4 rows, and so on).
constexpr int kSwizzleN = (kChunksN & -kChunksN) < 8 ? (kChunksN & -kChunksN) : 8;
__device__ __forceinline__ int swizzle_phase_kn(int row) {
  return (row / (8 / kSwizzleN)) & (kSwizzleN - 1);
}
__device__ __forceinline__ int swizzle_kn(int row, int chunk) {
  return row * kBN + ((chunk ^ swizzle_phase_kn(row)) << 3);
}

// ---- Global -> shared tile loads ---------------------------------------------------------
// A ROWS x BK tile of a K-contiguous operand (row pitch ld = K) from `src` (the tile's first
// row, column 0). Consecutive threads take consecutive chunks of a row (coalesced along K);
// each thread keeps one chunk column and walks rows kRowStep apart from one base pointer.
template <int ROWS>
struct TileLoad {
  static constexpr int kRowStep = kThreads / kChunksPerRow;
  static constexpr int kIters = (ROWS + kRowStep - 1) / kRowStep;
  static_assert(kThreads % kChunksPerRow == 0, "a row's chunks must divide the block");

  // rows_left: rows of the operand from the tile's first row on; k_end: end of the K slice.
  static __device__ __forceinline__ void async(unsigned dst, elem_t* dst_ptr,
                                               const elem_t* __restrict__ src, int rows_left,
                                               int ld, int k0, int k_end, bool k_aligned, int tid) {
    const int r0 = tid / kChunksPerRow;
    const int chunk = tid % kChunksPerRow;
    const int gk = k0 + chunk * 8;
    const long long step = (long long)kRowStep * ld;
    const elem_t* p = src + (long long)r0 * ld + gk;
    if (k_aligned) {
      // K % 8 == 0 and slices end on multiples of BK: a chunk is all in or all out.
      const bool k_ok = gk < k_end;
#pragma unroll
      for (int i = 0; i < kIters; ++i, p += step) {
        const int r = r0 + i * kRowStep;
        if (ROWS % kRowStep != 0 && r >= ROWS) continue;
        const bool valid = k_ok && r < rows_left;
        cp_async16(dst + 2 * swizzle(r, chunk), valid ? (const void*)p : (const void*)src, valid);
      }
    } else {
      // Rows are not 16-byte aligned: 2-byte loads, each checked against the slice's end.
#pragma unroll
      for (int i = 0; i < kIters; ++i, p += step) {
        const int r = r0 + i * kRowStep;
        if (ROWS % kRowStep != 0 && r >= ROWS) continue;
        unsigned w[4] = {0u, 0u, 0u, 0u};
        if (r < rows_left) {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (gk + e < k_end) w[e / 2] |= (unsigned)p[e] << (16 * (e % 2));
        }
        *reinterpret_cast<uint4*>(dst_ptr + swizzle(r, chunk)) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
};

// The BK x BN tile of B stored [K,N] (row pitch ld = N) from `src` (row k 0 of the operand,
// the tile's first column): BK rows of kChunksN chunks, consecutive threads on consecutive
// chunks of a row (coalesced along N). k0, k_end: the tile's first row and the K slice's end;
// n_left: columns from the tile's first on; n_aligned: N % 8 == 0, so a chunk is all in or
// all out and starts on 16 bytes.
struct TileLoadKN {
  static constexpr int kChunks = BK * kChunksN;
  // When a row's chunks divide the block, each thread keeps one chunk column and walks rows
  // kRowStep apart from one pointer (as TileLoad does): nothing per row stays live in registers
  // across the K loop. Otherwise (3, 5, 6, ... chunks) every copy finds its own row and chunk.
  static constexpr bool kFixedChunk = kThreads % kChunksN == 0;
  static constexpr int kRowStep = kFixedChunk ? kThreads / kChunksN : 1;
  static constexpr int kIters =
      kFixedChunk ? (BK + kRowStep - 1) / kRowStep : (kChunks + kThreads - 1) / kThreads;

  static __device__ __forceinline__ void copy(unsigned dst, elem_t* dst_ptr, const elem_t* p,
                                              const elem_t* src, int r, int chunk, bool k_ok,
                                              int gn, int n_left, bool n_aligned) {
    if (n_aligned) {
      const bool valid = k_ok && gn < n_left;
      cp_async16(dst + 2 * swizzle_kn(r, chunk), valid ? (const void*)p : (const void*)src, valid);
    } else {
      unsigned w[4] = {0u, 0u, 0u, 0u};
      if (k_ok) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (gn + e < n_left) w[e / 2] |= (unsigned)p[e] << (16 * (e % 2));
      }
      *reinterpret_cast<uint4*>(dst_ptr + swizzle_kn(r, chunk)) =
          make_uint4(w[0], w[1], w[2], w[3]);
    }
  }

  static __device__ __forceinline__ void async(unsigned dst, elem_t* dst_ptr,
                                               const elem_t* __restrict__ src, int n_left, int ld,
                                               int k0, int k_end, bool n_aligned, int tid) {
    if (kFixedChunk) {
      const int chunk = tid % kChunksN, r0 = tid / kChunksN, gn = chunk * 8;
      const long long step = (long long)kRowStep * ld;
      const elem_t* p = src + (long long)(k0 + r0) * ld + gn;
#pragma unroll
      for (int i = 0; i < kIters; ++i, p += step) {
        const int r = r0 + i * kRowStep;
        if (BK % kRowStep != 0 && r >= BK) continue;
        copy(dst, dst_ptr, p, src, r, chunk, k0 + r < k_end, gn, n_left, n_aligned);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        const int idx = tid + i * kThreads;
        if (kChunks % kThreads != 0 && idx >= kChunks) continue;
        const int r = idx / kChunksN, chunk = idx % kChunksN;
        const elem_t* p = src + (long long)(k0 + r) * ld + chunk * 8;
        copy(dst, dst_ptr, p, src, r, chunk, k0 + r < k_end, chunk * 8, n_left, n_aligned);
      }
    }
  }
};

// ---- Compute -----------------------------------------------------------------------------
// One BK-deep step of a warp on one stage. a_lane/b_lane: byte addresses of this lane's
// ldmatrix row in the warp's first A/B rows, k chunk 0 before swizzling; a_x/b_x: the lane's
// chunk XOR (its swizzle phase, and which 8-column half of a k16 step it names).
// B stored [K,N] ([BK][BN] tiles, ldmatrix .trans): b_lane is the start of the lane's k row
// (k 0-15 of the step) and b_x holds the lane's first n chunk above bit 3 and the row's swizzle
// phase in bits 0-2, since the phase applies after the warp's chunk offset is added.
__device__ __forceinline__ void compute_stage(unsigned a_lane, unsigned b_lane, int a_x, int b_x,
                                              float (&acc)[kMmaM][kMmaN][4]) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    unsigned af[kMmaM][4];
    unsigned bf[kMmaN][2];
    const unsigned a_col = (unsigned)(((2 * kk) ^ a_x) << 4);
#if B_K_CONTIGUOUS
    const unsigned b_col = (unsigned)(((2 * kk) ^ b_x) << 4);
#endif
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) ldmatrix_x4(af[i], a_lane + i * 16 * BK * 2 + a_col);
#pragma unroll
    for (int j = 0; j + 1 < kMmaN; j += 2) {
      unsigned r[4];
#if B_K_CONTIGUOUS
      ldmatrix_x4(r, b_lane + j * 8 * BK * 2 + b_col);
#else
      ldmatrix_x4_trans(r, b_lane + kk * 16 * kBN * 2 + (((b_x >> 3) + j) ^ (b_x & 7)) * 16);
#endif
      bf[j][0] = r[0];
      bf[j][1] = r[1];
      bf[j + 1][0] = r[2];
      bf[j + 1][1] = r[3];
    }
    if (kMmaN % 2 == 1) {
      unsigned r[2];
#if B_K_CONTIGUOUS
      ldmatrix_x2(r, b_lane + (kMmaN - 1) * 8 * BK * 2 + b_col);
#else
      ldmatrix_x2_trans(r, b_lane + kk * 16 * kBN * 2 +
                               (((b_x >> 3) + kMmaN - 1) ^ (b_x & 7)) * 16);
#endif
      bf[kMmaN - 1][0] = r[0];
      bf[kMmaN - 1][1] = r[1];
    }
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) mma_16816(acc[i][j], af[i], bf[j]);
  }
}

struct Problem {
  const elem_t* a;     // X rows of the tile's first row
  const elem_t* b;     // W rows of the tile's first row; B stored [K,N]: its first column
  int k;               // row pitch of both operands (of A alone when B is stored [K,N])
  int n;               // row pitch of B stored [K,N]
  int m_left, n_left;  // rows of X and W from the tile origin on
  KSlice slice;        // this split's part of K
  bool k_aligned;
  bool n_aligned;      // B stored [K,N]: N % 8 == 0
};

// acc += A[tile rows, slice] . B[tile rows, slice]^T through the STAGES-deep cp.async pipeline.
__device__ __forceinline__ void mainloop(const Problem& p, elem_t* smem, int tid, unsigned a_lane,
                                         unsigned b_lane, int a_x, int b_x,
                                         float (&acc)[kMmaM][kMmaN][4]) {
  elem_t* As = smem;
  elem_t* Bs = smem + STAGES * kStageA;
  const unsigned as = shared_address(As), bs = shared_address(Bs);
  auto load = [&](int stage, int tile) {
    const int k0 = p.slice.begin + tile * BK;
    TileLoad<kBM>::async(as + stage * kStageA * 2, As + stage * kStageA, p.a, p.m_left, p.k, k0,
                         p.slice.end, p.k_aligned, tid);
#if B_K_CONTIGUOUS
    TileLoad<kBN>::async(bs + stage * kStageB * 2, Bs + stage * kStageB, p.b, p.n_left, p.k, k0,
                         p.slice.end, p.k_aligned, tid);
#else
    TileLoadKN::async(bs + stage * kStageB * 2, Bs + stage * kStageB, p.b, p.n_left, p.n, k0,
                      p.slice.end, p.n_aligned, tid);
#endif
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < p.slice.num_tiles) load(s, s);
    cp_async_commit();  // empty groups keep the wait count below uniform
  }
  int read_stage = 0;
  int write_stage = STAGES - 1;
#pragma unroll 1
  for (int t = 0; t < p.slice.num_tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
    __syncthreads();              // everyone's have; and tile t-1's buffer is free again
    if (t + STAGES - 1 < p.slice.num_tiles) load(write_stage, t + STAGES - 1);
    cp_async_commit();
    compute_stage(a_lane + read_stage * kStageA * 2, b_lane + read_stage * kStageB * 2, a_x, b_x,
                  acc);
    read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();
}

}  // namespace dc

extern "C" __global__ void __launch_bounds__(dc::kThreads, MIN_BLOCKS)
    dietcode_dense_tc(DietcodeArgs args) {
  using namespace dc;
  extern __shared__ uint4 dc_smem[];  // 16-byte aligned for cp.async and ldmatrix
  elem_t* smem = reinterpret_cast<elem_t*>(dc_smem);

  const int m = (int)args.m;
  const int n = extent_n(args);
  const int k = extent_k(args);

  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // ldmatrix lanes. A (x4): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
  // (rows 8-15, k 8-15) = mma's a0..a3. B (x4, two n8 tiles): (n 0-7, k 0-7), (n 0-7, k 8-15),
  // (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of tile j and of tile j + 1. Warp tiles start on
  // multiples of 8 rows, so a lane's swizzle phase depends on its row within 8 only.
  const int a_row = warp_m * WM + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int a_x = (lane >> 4) ^ swizzle_phase(lane & 7);
  const unsigned a_lane = shared_address(smem) + a_row * BK * 2;
#if B_K_CONTIGUOUS
  const int b_row = warp_n * WN + (lane & 7) + (lane >> 4) * 8;
  const int b_x = ((lane >> 3) & 1) ^ swizzle_phase(lane & 7);
  const unsigned b_lane = shared_address(smem + STAGES * kStageA) + b_row * BK * 2;
#else
  // B stored [K,N] (.trans): matrices (k 0-7, chunk c), (k 8-15, c), (k 0-7, c + 1), (k 8-15,
  // c + 1) = b0, b1 of n8 tile j and of tile j + 1, for lanes 0-7, 8-15, 16-23, 24-31.
  const int b_k = (lane & 7) + ((lane >> 3) & 1) * 8;
  const int b_x = ((warp_n * WN / 8 + (lane >> 4)) << 3) | swizzle_phase_kn(b_k);
  const unsigned b_lane = shared_address(smem + STAGES * kStageA) + b_k * kBN * 2;
#endif

  const int batch = blockIdx.z / SPLITK;
  const int split = blockIdx.z % SPLITK;
  const int n0 = blockIdx.x * kBN;

  Problem p;
  p.k = k;
#if B_K_CONTIGUOUS
  p.b = static_cast<const elem_t*>(args.b) + batch * args.stride_b + (long long)n0 * k;
#else
  p.b = static_cast<const elem_t*>(args.b) + batch * args.stride_b + n0;
#endif
  p.n = n;
  p.n_left = n - n0;
  p.k_aligned = k % 8 == 0;
  p.n_aligned = n % 8 == 0;
  p.slice = k_slice<BK, SPLITK>(k, split);

  const elem_t* a_base = static_cast<const elem_t*>(args.a) + batch * args.stride_a;
  const OutputStore<SPLITK> store(args, batch, split, m, n);

  const int m_tiles = (m + kBM - 1) / kBM;
  for (int mt = blockIdx.y; mt < m_tiles; mt += gridDim.y) {
    const int m0 = mt * kBM;
    p.a = a_base + (long long)m0 * k;
    p.m_left = m - m0;
    float acc[kMmaM][kMmaN][4];
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    mainloop(p, smem, tid, a_lane, b_lane, a_x, b_x, acc);

    // Only the stores are guarded: padding rows and columns are dropped here.
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + warp_m * WM + i * 16 + (lane >> 2) + half * 8;
        if (row >= m) continue;
        const long long row_offset = (long long)row * n;
#pragma unroll
        for (int j = 0; j < kMmaN; ++j) {
          const int col = n0 + warp_n * WN + j * 8 + (lane & 3) * 2;
          store.pair(row_offset, col, acc[i][j][half * 2], acc[i][j][half * 2 + 1]);
        }
      }
    __syncthreads();  // the next M tile reuses shared memory
  }
}

// Split-K reduction (launched only when SPLITK > 1): see dc::reduce_partials.
extern "C" __global__ void __launch_bounds__(256) dietcode_dense_tc_reduce(DietcodeArgs args) {
  dc::reduce_partials<SPLITK>(args);
}
