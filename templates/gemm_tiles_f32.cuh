// gemm_tiles_f32: tile loaders for operands stored as plain matrices, one per layout. Each
// follows the loader contract of gemm_core_f32.cuh (included first) and writes its tile into
// the k-major shared layout with local padding: rows past the operand's extent and columns
// past the K slice become zeros.
//
//   KContiguousTile   rows are K-contiguous (pitch ld = K): dense X[M,K] and W[N,K],
//                     batch_matmul A[M,K] and B^T stored [N,K], conv2d weights [K, R*S*C].
//                     Loads run along K; the store into shared memory transposes.
//   MNContiguousTile  the operand is stored [K][ld] with the tile's rows contiguous (ld = M or
//                     N): batch_matmul A^T stored [K,M] and B[K,N]. Loads and shared stores
//                     both run along the rows: nothing to transpose.
// No include guard: see gemm_core_f32.cuh.

namespace dc {

template <int ROWS, int LD>
struct KContiguousTile {
  using Walk = TileWalk<ROWS, kWalkChunk>;
  const float* __restrict__ src;  // row 0, column 0 of this batch element
  int ld;                         // row pitch (K)
  bool vec_ok;                    // ld % VEC == 0: every VEC-chunk is aligned
  long long row0;
  int rows_left;
  float reg[Walk::kIters][VEC];

  __device__ __forceinline__ KContiguousTile(const float* base, int pitch)
      : src(base), ld(pitch), vec_ok(pitch % VEC == 0), row0(0), rows_left(0) {}

  __device__ __forceinline__ void begin_tile(int first_row, int rows, int) {
    row0 = first_row;
    rows_left = rows;
  }

  // Whether the k-tile at k0 is whole and every row of the tile exists: true for all but the
  // last tile along M (N) and the last k-tile of a slice. fetch() brings such a tile in with
  // no bounds checks, zero fills or branches: in sm_90 SASS the share of FFMAs in the K loop
  // goes from 87% to 92% (64 x 256 tile, 16 x 8 per thread) and from 81% to 84% (BERT fc2's
  // 64 x 192 kernel); scripts/sass-mix.py counts it. The branch is uniform across the block.
  // copy_async() has no such path. One was tried (b06f552): 58 fewer instructions a k-tile in
  // cuBLAS's 128 x 128 3-stage design, yet on an H200 that kernel took 2.8% longer on BERT's
  // qkv and 8.0% on fc2 than before it, while a kernel it did not touch timed the same
  // (docs/results/h200 section 8); and beside the general path it made the largest tiles spill.
  __device__ __forceinline__ bool interior(int k0, int k_end) const {
#ifdef DIETCODE_SASS_INTERIOR_ONLY  // set by scripts/sass-mix.py alone: the hot path, counted
    return true;
#else
    return rows_left >= ROWS && k0 + BK <= k_end;
#endif
  }

  // Loads walk rows from one base pointer plus a running row stride. (Precomputing one 64-bit
  // address per chunk made ptxas hoist them all and spill.)
  __device__ __forceinline__ void fetch(int k0, int k_end, int tid) {
    const int r0 = tid / Walk::kChunksPerRow;
    const int gk = k0 + (tid % Walk::kChunksPerRow) * VEC;
    const long long stride = (long long)Walk::kRowStep * ld;
    const float* p = src + (row0 + r0) * ld + gk;
    if (interior(k0, k_end) && (VEC == 1 || vec_ok)) {
#pragma unroll
      for (int i = 0; i < Walk::kIters; ++i, p += stride)
        if (Walk::in_tile(i, r0)) load_vector<VEC>(p, reg[i]);
      return;
    }
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i, p += stride) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) reg[i][e] = 0.0f;
      const int r = r0 + i * Walk::kRowStep;
      if (!Walk::in_tile(i, r0) || r >= rows_left) continue;
      if (VEC == 1 || vec_ok) {
        // K % VEC == 0 and slices end on multiples of BK: a chunk is all in or all out.
        if (gk < k_end) load_vector<VEC>(p, reg[i]);
      } else {
        // A runtime pitch that is not a multiple of VEC: rows are not vector-aligned.
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          if (gk + e < k_end) reg[i][e] = p[e];
      }
    }
  }

  __device__ __forceinline__ void store(float* dst, int tid) const {
    store_k_rows<ROWS, LD>(reg, dst, tid);
  }

  // One 4-byte copy per element.
  __device__ __forceinline__ void copy_async(float* dst, int k0, int k_end, int tid) {
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
};

// The largest power of two <= X (X >= 1).
template <int X>
struct Pow2Floor {
  static constexpr int value = 2 * Pow2Floor<X / 2>::value;
};
template <>
struct Pow2Floor<1> {
  static constexpr int value = 1;
};

template <int ROWS, int LD>
struct MNContiguousTile {
  // Chunk width along the rows: VEC when it divides the tile's row count, else the widest
  // that does (a chunk never straddles two k-rows of the shared tile).
  static constexpr int kV = ROWS % VEC == 0 ? VEC : (VEC >= 2 && ROWS % 2 == 0 ? 2 : 1);

  // The block as a grid of kTK x kTR threads over a BK x (ROWS / W) tile of W-wide chunks:
  // kTR consecutive threads (a power of two, as the block size is) cover consecutive chunks of
  // one k-row, so a warp's loads are coalesced; a thread visits chunks kTR apart in its k-row
  // and k-rows kTK apart. Its addresses are one pointer plus a running k-row stride and
  // constant offsets. (Addresses computed per chunk from its index are hoisted by ptxas and
  // spill.)
  template <int W>
  struct Grid {
    static constexpr int kChunks = ROWS / W;
    static constexpr int kTR = Pow2Floor<(kChunks < kThreads ? kChunks : kThreads)>::value;
    static constexpr int kTK = kThreads / kTR;
    static constexpr int kRowIters = (kChunks + kTR - 1) / kTR;
    static constexpr int kKIters = (BK + kTK - 1) / kTK;
    static __device__ __forceinline__ bool row_exists(int j, int r0) {
      return kChunks % kTR == 0 || r0 + j * kTR < kChunks;
    }
    static __device__ __forceinline__ bool k_exists(int i, int kk0) {
      return BK % kTK == 0 || kk0 + i * kTK < BK;
    }
  };
  using Staged = Grid<kV>;
  using Copied = Grid<1>;

  const float* __restrict__ src;  // k-row 0, row 0 of this batch element
  int ld;                         // pitch of a k-row (M or N)
  bool vec_ok;                    // ld % kV == 0: chunks are aligned (row0 is a multiple of kV)
  int row0, rows_left;
  float reg[Staged::kKIters * Staged::kRowIters][kV];

  __device__ __forceinline__ MNContiguousTile(const float* base, int pitch)
      : src(base), ld(pitch), vec_ok(pitch % kV == 0), row0(0), rows_left(0) {}

  __device__ __forceinline__ void begin_tile(int first_row, int rows, int) {
    row0 = first_row;
    rows_left = rows;
  }

  __device__ __forceinline__ void fetch(int k0, int k_end, int tid) {
    using G = Staged;
    const int r0 = tid % G::kTR, kk0 = tid / G::kTR;
    const long long k_stride = (long long)G::kTK * ld;
    const float* p = src + (long long)(k0 + kk0) * ld + row0 + r0 * kV;
#pragma unroll
    for (int i = 0; i < G::kKIters; ++i, p += k_stride) {
      const bool k_ok = G::k_exists(i, kk0) && k0 + kk0 + i * G::kTK < k_end;
#pragma unroll
      for (int j = 0; j < G::kRowIters; ++j) {
        float* out = reg[i * G::kRowIters + j];
#pragma unroll
        for (int e = 0; e < kV; ++e) out[e] = 0.0f;
        const int r = (r0 + j * G::kTR) * kV;
        if (!k_ok || !G::row_exists(j, r0) || r >= rows_left) continue;
        const float* q = p + j * G::kTR * kV;
        if (kV > 1 && vec_ok && r + kV <= rows_left) {
          load_vector<kV>(q, out);
        } else {  // the tile's last partial chunk, or a pitch vectors cannot walk
#pragma unroll
          for (int e = 0; e < kV; ++e)
            if (r + e < rows_left) out[e] = q[e];
        }
      }
    }
  }

  __device__ __forceinline__ void store(float* dst, int tid) const {
    using G = Staged;
    const int r0 = tid % G::kTR, kk0 = tid / G::kTR;
#pragma unroll
    for (int i = 0; i < G::kKIters; ++i) {
      if (!G::k_exists(i, kk0)) continue;
#pragma unroll
      for (int j = 0; j < G::kRowIters; ++j) {
        if (!G::row_exists(j, r0)) continue;
        const float* in = reg[i * G::kRowIters + j];
        float* d = dst + (kk0 + i * G::kTK) * LD + (r0 + j * G::kTR) * kV;
        // LD and the offset are multiples of kV: the vector stores are aligned.
        if (kV == 4) {
          float4 t;
          t.x = in[0];
          t.y = in[kV > 1 ? 1 : 0];
          t.z = in[kV > 2 ? 2 : 0];
          t.w = in[kV > 3 ? 3 : 0];
          *reinterpret_cast<float4*>(d) = t;
        } else if (kV == 2) {
          float2 t;
          t.x = in[0];
          t.y = in[kV > 1 ? 1 : 0];
          *reinterpret_cast<float2*>(d) = t;
        } else {
          d[0] = in[0];
        }
      }
    }
  }

  // One 4-byte copy per element.
  __device__ __forceinline__ void copy_async(float* dst, int k0, int k_end, int tid) {
    using G = Copied;
    const int r0 = tid % G::kTR, kk0 = tid / G::kTR;
    const int k_left = k_end - k0 - kk0;  // k-rows of this thread's column that exist
    const int rows = rows_left - r0;
    const float* p = src + (long long)(k0 + kk0) * ld + row0 + r0;
    float* d = dst + kk0 * LD + r0;
#pragma unroll
    for (int i = 0; i < G::kKIters; ++i) {
      if (!G::k_exists(i, kk0)) continue;
      const bool k_ok = i * G::kTK < k_left;
#pragma unroll
      for (int j = 0; j < G::kRowIters; ++j) {
        if (!G::row_exists(j, r0)) continue;
        const bool valid = k_ok && j * G::kTR < rows;
        cp_async_f32(d + i * G::kTK * LD + j * G::kTR,
                     valid ? p + (long long)i * G::kTK * ld + j * G::kTR : src, valid);
      }
    }
  }
};

}  // namespace dc
