// dense_wgmma: Y[M,N] = epilogue(X[M,K] . W[N,K]^T (+ bias[N])) with Hopper's warpgroup MMA,
// for f16 and bf16 (DTYPE 1, 2), fp32 accumulation, output in the input type. sm_90a only.
// Compiled by NVRTC only: no CUDA headers, PTX through inline asm (dietcode_tc.h,
// dietcode_wgmma.h).
//
// Guided tour
// * Warp specialization: warpgroup 0 (128 threads) is the producer, warpgroups 1..WG_M the
//   consumers. A block computes a BM x BN tile of Y, BM = 64 * WG_M: consumer c owns rows
//   64c .. 64c + 63 and computes them with wgmma.mma_async.m64nBNk16, accumulators in registers.
// * Tile sizes are the shape's to choose: BN is any multiple of 8 up to 256 and WG_M any of
//   1..4, so the tuner can pick, per shape, a grid that fills the SMs (Llama-7B's 11008 columns
//   in 126 blocks of 88 for one M tile, or 66 x 2 blocks of 168 for two) instead of leaving a
//   third of them idle with a power-of-two tile.
// * The K loop runs over 64-deep tiles through a ring of STAGES shared-memory stages, each
//   holding BM rows of X and BN rows of W as 128-byte rows with the 128-byte swizzle, which is
//   the layout wgmma's shared-memory descriptors read (dietcode_wgmma.h).
// * Two mbarriers per stage: full[s] completes when the producer's copies into s have landed
//   (each producer thread arrives once via cp.async.mbarrier.arrive.noinc); empty[s] completes
//   when every consumer warp has released s: lane 0 arrives once wgmma.wait_group, which the
//   whole warp executes together, says the MMAs that read it are done. One arrival per warp
//   rather than per thread keeps 32x fewer atomic updates of the barrier on the path that
//   hands the stage back to the producer. Pipeline position it = (stage it % STAGES, parity
//   (it / STAGES) & 1) is counted the same way on both sides, across the M tiles a block visits.
// * PRODUCER 0: the producer warpgroup copies 16-byte chunks with cp.async, zero-filling rows
//   past M (N) and chunks past the K slice (local padding: the MMAs run unpredicated). When K
//   is not a multiple of 8 it falls back to guarded 2-byte loads and plain shared stores, then
//   a plain arrival. Consumers fence the generic proxy against the async proxy after acquiring
//   a stage.
// * PRODUCER 1: one thread of the producer warpgroup issues two TMA tensor copies per stage
//   (a BM x 64 box of X, a BN x 64 box of W) that land already swizzled and complete on full[s]
//   by transaction bytes; the TMA fills what lies past M, N or K with zeros, so padding costs
//   nothing. The host passes the two tensor maps after the args (pack_tensor_maps.h). Needs
//   K % 8 == 0 (16-byte row pitch): the space offers it only for a static K that is.
// * One wgmma group stays in flight: consumers commit tile t's four k16 MMAs, wait until at
//   most one group is pending, then release tile t-1's stage.
// * SPLITK > 1: slice s writes raw fp32 sums to workspace[batch][SPLITK][M][N];
//   dietcode_dense_wgmma_reduce adds them in a fixed order and applies the epilogue.
// * EPI_SMEM 1 (SPLITK 1 only): the outputs leave through shared memory. In wgmma's layout a
//   lane holds two adjacent outputs per row and n8 block, so direct stores write 4 bytes each
//   and a warp's store touches 8 rows with 16 bytes in each. Staged, each consumer warp writes
//   its 16 rows into a 16 x 64 buffer of its own (epilogue applied, rounded) and reads them
//   back as 16-byte pieces of rows: a warp's store then writes 4 rows of 128 bytes. Worth it
//   where the store is a large share of the work (short K, BERT's 768); the tuner decides.
// * M_FASTEST 1: consecutive blocks take consecutive M tiles of one N tile (when the grid has a
//   block per M tile), instead of consecutive N tiles of one M tile. The blocks that read the
//   same tile of W then run at the same time and share it through L2: a W larger than L2
//   (Llama-7B's: 90 MB) is read from memory once, not once per M tile, when a grid takes
//   several waves.
// * M_TILES (host side only): the grid has ceil(M tiles / M_TILES) blocks along y and a block
//   walks M tiles gridDim.y apart, which it always could (for M past 65535 tiles). The ring runs
//   on across tiles, so while the consumers store one tile the producer already fills stages
//   for the next: the pipeline fills once per block. The kernel itself does not read M_TILES.
// * Launch: grid (ceil(N/BN), min(ceil(ceil(M/BM)/M_TILES), 65535), batch*SPLITK), 128 * (1 + WG_M)
//   threads, params (args) or with PRODUCER 1 (args, map of X, map of W), dynamic shared memory
//   STAGES * (BM + BN) * 128 + 2048 bytes (tiles start at the next 1024-byte boundary; the barriers
//   follow them). X, W, Y 16-byte aligned.

#include "dietcode_args.h"
#include "dietcode_tc.h"
#include "dietcode_wgmma.h"

// ---- Tunables (each has a default so the file compiles on its own) ------------------------
// DTYPE, EPILOGUE and SPLITK, which both tensor-core templates take, are in dietcode_tc.h.
#ifndef WG_M
#define WG_M 2  // consumer warpgroups, 64 rows each: 1..4
#endif
#ifndef WGM
#define WGM 64  // rows per consumer warpgroup: fixed by wgmma's m64
#endif
#ifndef BN
#define BN 128  // wgmma's n: a multiple of 8 up to 256
#endif
#ifndef BK
#define BK 64  // fixed: one 128-byte swizzled row
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PRODUCER
#define PRODUCER 0  // 0: cp.async from the producer warpgroup; 1: TMA tensor copies
#endif
#ifndef EPI_SMEM
#define EPI_SMEM 0  // 1: outputs staged through shared memory, stored 16 bytes at a time
#endif
#ifndef M_FASTEST
#define M_FASTEST 0  // 1: blocks in launch order walk M tiles first
#endif
#ifndef M_TILES
#define M_TILES 1  // M tiles per block: the launch plan's grid, not the kernel, applies it
#endif

#if WG_M < 1 || WG_M > 4
#error "WG_M must be in 1..4"
#endif
#if WGM != 64
#error "WGM must be 64 (wgmma m64)"
#endif
#if BN < 8 || BN > 256 || BN % 8 != 0
#error "BN must be a multiple of 8 in 8..256 (wgmma's n)"
#endif
#if BK != 64
#error "BK must be 64 (one 128-byte swizzled row)"
#endif
#if STAGES < 2 || STAGES > 6
#error "STAGES must be in 2..6"
#endif
#if PRODUCER != 0 && PRODUCER != 1
#error "PRODUCER must be 0 (cp.async) or 1 (TMA)"
#endif
#if EPI_SMEM != 0 && EPI_SMEM != 1
#error "EPI_SMEM must be 0 or 1"
#endif
#if M_FASTEST != 0 && M_FASTEST != 1
#error "M_FASTEST must be 0 or 1"
#endif
#if M_TILES < 1 || M_TILES > 4
#error "M_TILES must be in 1..4"
#endif
#if M_FASTEST == 1 && M_TILES != 1
#error "M_FASTEST renumbers a grid with one block per M tile: it needs M_TILES == 1"
#endif
#if EPI_SMEM == 1 && SPLITK != 1
#error "EPI_SMEM stages final outputs: it needs SPLITK == 1"
#endif
#if PRODUCER == 1 && defined(STATIC_K) && STATIC_K % 8 != 0
#error "the TMA producer needs K % 8 == 0 (rows 16-byte aligned)"
#endif

namespace dc {

constexpr int kThreads = 128 * (1 + WG_M);
constexpr int kConsumerWarps = 4 * WG_M;
constexpr int kSplitK = SPLITK;
constexpr int kBM = WGM * WG_M;
constexpr int kBN = BN;
constexpr int kRowBytes = BK * 2;  // 128
constexpr int kStageABytes = kBM * kRowBytes;
constexpr int kStageBBytes = kBN * kRowBytes;
constexpr int kStageBytes = kStageABytes + kStageBBytes;
constexpr int kBarrierBytes = 1024;  // 2 * STAGES mbarriers of 8 bytes, padded
// EPI_SMEM's buffers, one per consumer warp after the barriers: 16 rows of 64 outputs, each row
// padded by 16 bytes so that the 8 rows a fragment store writes fall in different banks.
constexpr int kEpiCols = 64;
constexpr int kEpiPitch = kEpiCols * 2 + 16;
constexpr int kEpiWarpBytes = 16 * kEpiPitch;
constexpr int kEpiBytes = EPI_SMEM ? 4 * WG_M * kEpiWarpBytes : 0;
constexpr int kSmemBytes =
    STAGES * kStageBytes + 1024 + kBarrierBytes + kEpiBytes;  // + alignment slack
constexpr int kAcc = BN / 2;  // fp32 accumulators per consumer thread
// Arrivals that complete a full barrier: every producer thread's, or the TMA issuer's alone.
constexpr unsigned kFullArrivals = PRODUCER == 1 ? 1 : 128;
static_assert(kStageABytes % 1024 == 0 && kStageBBytes % 1024 == 0,
              "every tile must start on a 1024-byte swizzle boundary");

#ifdef DIETCODE_EXPECT_SMEM
static_assert(kSmemBytes == DIETCODE_EXPECT_SMEM, "launch plan disagrees on shared memory");
#endif
#ifdef DIETCODE_EXPECT_THREADS
static_assert(kThreads == DIETCODE_EXPECT_THREADS, "launch plan disagrees on threads");
#endif

// Byte offset of (row, 16-byte chunk) in a 128-byte-swizzled tile.
__device__ __forceinline__ unsigned swizzled(int row, int chunk) {
  return (unsigned)(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}

// The producer's copy of one ROWS x 64 tile (rows of a K-contiguous operand, pitch ld = K,
// starting at src) into the stage at shared address dst / generic pointer dst_ptr. Thread t of
// the producer warpgroup copies chunk t % 8 of rows t / 8, t / 8 + 16, ... below ROWS.
template <int ROWS>
__device__ __forceinline__ void produce_tile(unsigned dst, unsigned char* dst_ptr,
                                             const elem_t* __restrict__ src, int rows_left, int ld,
                                             int k0, int k_end, bool k_aligned, int ptid) {
  constexpr int kRowStep = 128 / 8;
  static_assert(ROWS % 8 == 0, "tile rows must be whole 8-row swizzle groups");
  const int r0 = ptid >> 3, chunk = ptid & 7;
  const int gk = k0 + chunk * 8;
  const long long step = (long long)kRowStep * ld;
  const elem_t* p = src + (long long)r0 * ld + gk;
  if (k_aligned) {
    const bool k_ok = gk < k_end;  // K % 8 == 0: a chunk is all in or all out
#pragma unroll 4
    for (int r = r0; r < ROWS; r += kRowStep, p += step) {
      const bool valid = k_ok && r < rows_left;
      cp_async16(dst + swizzled(r, chunk), valid ? (const void*)p : (const void*)src, valid);
    }
  } else {
#pragma unroll 1
    for (int r = r0; r < ROWS; r += kRowStep, p += step) {
      unsigned w[4] = {0u, 0u, 0u, 0u};
      if (r < rows_left) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (gk + e < k_end) w[e / 2] |= (unsigned)p[e] << (16 * (e % 2));
      }
      *reinterpret_cast<uint4*>(dst_ptr + swizzled(r, chunk)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// The four k16 MMAs of one stage for consumer c: A rows 64c .. 64c + 63 of the stage, all BN
// rows of B, each k16 step 32 bytes further into the 128-byte rows.
__device__ __forceinline__ void consume_stage(unsigned a_tile, unsigned b_tile,
                                              float (&acc)[kAcc]) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    const unsigned long long da = sw128_descriptor(a_tile + kk * 32);
    const unsigned long long db = sw128_descriptor(b_tile + kk * 32);
#if defined(DIETCODE_HOST_EMULATION)
    dc_emu_wgmma(acc, BN, da, db, DTYPE);
#else
    Wgmma<BN>::mma(acc, da, db);
#endif
  }
}

#if EPI_SMEM
// The staged store of one consumer warp's 16 rows (rows row0 .. row0 + 15 of Y, columns n0 ..
// n0 + BN - 1) through its buffer, 64 columns at a time: each lane writes its fragment's pairs,
// epilogue applied; then the warp reads the chunk back as 16-byte pieces of rows and stores
// them, 8 outputs each (piece by piece, output by output, at the edges of M and N or where
// rows are not 16-byte aligned).
__device__ __forceinline__ void store_staged(const OutputStore<1>& store, unsigned char* buffer,
                                             const float (&acc)[kAcc], int row0, int m, int n0,
                                             int lane) {
  const int n = store.n;
  const bool rows_aligned =
      n % 8 == 0 && reinterpret_cast<unsigned long long>(store.out) % 16 == 0;
  // Every index into acc must be known at compile time, or acc leaves the registers for local
  // memory: the loops over chunks and n8 blocks have constant bounds and unroll fully.
  constexpr int kChunks = (BN + kEpiCols - 1) / kEpiCols;
#pragma unroll
  for (int chunk = 0; chunk < kChunks; ++chunk) {
    const int c0 = chunk * kEpiCols;
#pragma unroll
    for (int i = 0; i < kEpiCols / 8; ++i) {
      if (c0 + i * 8 >= BN) continue;  // the last chunk of a width that is not a multiple of 64
      const int local_col = i * 8 + (lane & 3) * 2;
      const int col = n0 + c0 + local_col;
      const float b0 = col < n ? bias_at(store.bias, col) : 0.0f;
      const float b1 = col + 1 < n ? bias_at(store.bias, col + 1) : 0.0f;
      const int a = 4 * (chunk * (kEpiCols / 8) + i);
#pragma unroll
      for (int half = 0; half < 2; ++half)
        *reinterpret_cast<unsigned*>(buffer + ((lane >> 2) + 8 * half) * kEpiPitch +
                                     local_col * 2) =
            pack2(apply_epilogue(acc[a + 2 * half], b0), apply_epilogue(acc[a + 2 * half + 1], b1));
    }
    warp_sync();
    const int pieces = (BN - c0 < kEpiCols ? BN - c0 : kEpiCols) / 8;  // per row of the chunk
    for (int v = lane; v < 16 * pieces; v += 32) {
      const int r = v / pieces, local_col = (v % pieces) * 8;
      const int row = row0 + r, col = n0 + c0 + local_col;
      if (row >= m) continue;
      const uint4 piece = *reinterpret_cast<const uint4*>(buffer + r * kEpiPitch + local_col * 2);
      elem_t* dst = store.out + (long long)row * n + col;
      if (rows_aligned && col + 8 <= n) {
        *reinterpret_cast<uint4*>(dst) = piece;
      } else {
        const elem_t* values = reinterpret_cast<const elem_t*>(buffer + r * kEpiPitch + local_col * 2);
        for (int e = 0; e < 8 && col + e < n; ++e) dst[e] = values[e];
      }
    }
    warp_sync();  // every lane has read the chunk before the next one overwrites it
  }
}
#endif

// The pipeline position: the ring slot and the parity of its current round.
struct Ring {
  int stage = 0;
  unsigned parity = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) {
      stage = 0;
      parity ^= 1u;
    }
  }
};

}  // namespace dc

extern "C" __global__ void __launch_bounds__(dc::kThreads, 1)
#if PRODUCER == 1
    dietcode_dense_wgmma(DietcodeArgs args, const __grid_constant__ dc::TensorMap map_a,
                         const __grid_constant__ dc::TensorMap map_b) {
#else
    dietcode_dense_wgmma(DietcodeArgs args) {
#endif
  using namespace dc;
  extern __shared__ uint4 dc_smem[];
  unsigned char* smem_raw = reinterpret_cast<unsigned char*>(dc_smem);
  const unsigned raw = shared_address(smem_raw);
  const unsigned tiles = (raw + 1023u) & ~1023u;  // the swizzle repeats every 1024 bytes
#if PRODUCER == 0
  unsigned char* tiles_ptr = smem_raw + (tiles - raw);  // the scalar path's plain stores
#endif
  const unsigned bars = tiles + STAGES * kStageBytes;
#if EPI_SMEM
  unsigned char* epilogue_buffers = smem_raw + (bars + kBarrierBytes - raw);
#endif
  auto full_bar = [&](int s) { return bars + 8u * s; };
  auto empty_bar = [&](int s) { return bars + 8u * (STAGES + s); };

  const int m = (int)args.m;
  const int n = extent_n(args);
  const int k = extent_k(args);
#if PRODUCER == 0
  const bool k_aligned = k % 8 == 0;
#endif

  const int tid = threadIdx.x;
  const int wg = tid >> 7;  // 0: producer; 1..WG_M: consumers

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), kFullArrivals);
      mbar_init(empty_bar(s), kConsumerWarps);  // one per consumer warp
    }
#if PRODUCER == 1
    fence_barrier_init();
#endif
  }
  __syncthreads();  // barriers initialised before anyone uses them

  const int batch = blockIdx.z / SPLITK;
  const int split = blockIdx.z % SPLITK;
  const int m_tiles = (m + kBM - 1) / kBM;
  // This block's N tile and first M tile; it walks M tiles gridDim.y apart (more than one only
  // where M needs more than 65535 of them).
  int n_tile = blockIdx.x, m_first = blockIdx.y;
#if M_FASTEST
  if (gridDim.y == (unsigned)m_tiles) {  // one tile per block: renumber them M first
    const int id = blockIdx.y * gridDim.x + blockIdx.x;
    m_first = id % m_tiles;
    n_tile = id / m_tiles;
  }
#endif
  const int n0 = n_tile * kBN;
  const KSlice slice = k_slice<BK, SPLITK>(k, split);
  const int k_begin = slice.begin, num_tiles = slice.num_tiles;
#if PRODUCER == 0
  const int k_end = slice.end;  // the TMA needs no bound: it zero-fills past K itself
#endif
  Ring ring;

#if PRODUCER == 1
  if (wg == 0) {
    // ---- Producer: one thread drives the TMA; the other 127 have nothing to do ----
    if (tid == 0) {
      prefetch_tensor_map(&map_a);
      prefetch_tensor_map(&map_b);
      for (int mt = m_first; mt < m_tiles; mt += gridDim.y) {
#pragma unroll 1
        for (int t = 0; t < num_tiles; ++t, ring.advance()) {
          mbar_wait(empty_bar(ring.stage), ring.parity ^ 1u);  // consumers released this slot
          const unsigned stage = tiles + ring.stage * kStageBytes;
          const int k0 = k_begin + t * BK;
          // Whole boxes are always delivered (zeros included), so the count is fixed.
          mbar_arrive_expect_tx(full_bar(ring.stage), kStageBytes);
          tma_load_3d(stage, &map_a, k0, mt * kBM, batch, full_bar(ring.stage));
          tma_load_3d(stage + kStageABytes, &map_b, k0, n0, batch, full_bar(ring.stage));
        }
      }
    }
    return;
  }
#else
  if (wg == 0) {
    // ---- Producer ----
    const elem_t* a_base = static_cast<const elem_t*>(args.a) + batch * args.stride_a;
    const elem_t* b_tile =
        static_cast<const elem_t*>(args.b) + batch * args.stride_b + (long long)n0 * k;
    for (int mt = m_first; mt < m_tiles; mt += gridDim.y) {
      const int m0 = mt * kBM;
      const elem_t* a_tile = a_base + (long long)m0 * k;
#pragma unroll 1
      for (int t = 0; t < num_tiles; ++t, ring.advance()) {
        mbar_wait(empty_bar(ring.stage), ring.parity ^ 1u);  // consumers released this slot
        const unsigned stage = tiles + ring.stage * kStageBytes;
        unsigned char* stage_ptr = tiles_ptr + ring.stage * kStageBytes;
        const int k0 = k_begin + t * BK;
        produce_tile<kBM>(stage, stage_ptr, a_tile, m - m0, k, k0, k_end, k_aligned, tid);
        produce_tile<kBN>(stage + kStageABytes, stage_ptr + kStageABytes, b_tile, n - n0, k, k0,
                          k_end, k_aligned, tid);
        if (k_aligned)
          mbar_arrive_when_copied(full_bar(ring.stage));
        else
          mbar_arrive(full_bar(ring.stage));
      }
    }
    cp_async_wait<0>();
    return;
  }
#endif

  // ---- Consumers ----
  const int c = wg - 1;
  const int ctid = tid - 128 * wg;  // thread in the warpgroup
  const int warp = ctid >> 5, lane = ctid & 31;
  const OutputStore<SPLITK> store(args, batch, split, m, n);

  for (int mt = m_first; mt < m_tiles; mt += gridDim.y) {
    const int m0 = mt * kBM;
    float acc[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;

    int previous = -1;  // the stage whose MMAs may still be in flight
#pragma unroll 1
    for (int t = 0; t < num_tiles; ++t, ring.advance()) {
      mbar_wait(full_bar(ring.stage), ring.parity);
#if PRODUCER == 0
      fence_proxy_async();  // the copies (generic proxy) are visible to wgmma (async proxy)
#endif
      const unsigned stage = tiles + ring.stage * kStageBytes;
      pin_registers(acc);
      wgmma_fence();
      consume_stage(stage + c * (WGM * kRowBytes), stage + kStageABytes, acc);
      wgmma_commit();
      wgmma_wait<1>();  // tile t-1's MMAs are done: its stage can be refilled
      pin_registers(acc);
      if (previous >= 0 && lane == 0) mbar_arrive(empty_bar(previous));
      previous = ring.stage;
    }
    wgmma_wait<0>();
    pin_registers(acc);
    if (previous >= 0 && lane == 0) mbar_arrive(empty_bar(previous));

    // Only the stores are guarded: padding rows and columns are dropped here.
#if EPI_SMEM
    store_staged(store, epilogue_buffers + (c * 4 + warp) * kEpiWarpBytes, acc,
                 m0 + c * WGM + warp * 16, m, n0, lane);
#else
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + c * WGM + warp * 16 + (lane >> 2) + half * 8;
      if (row >= m) continue;
      const long long row_offset = (long long)row * n;
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
        const int col = n0 + i * 8 + (lane & 3) * 2;
        store.pair(row_offset, col, acc[4 * i + 2 * half], acc[4 * i + 2 * half + 1]);
      }
    }
#endif
  }
}

// Split-K reduction (launched only when SPLITK > 1): see dc::reduce_partials.
extern "C" __global__ void __launch_bounds__(256) dietcode_dense_wgmma_reduce(DietcodeArgs args) {
  dc::reduce_partials<SPLITK>(args);
}
