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

  // Loads walk rows from one base pointer plus a running row stride. (Precomputing one 64-bit
  // address per chunk made ptxas hoist them all and spill.)
  __device__ __forceinline__ void fetch(int k0, int k_end, int tid) {
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

template <int ROWS, int LD>
struct MNContiguousTile {
  // Chunk width along the rows: VEC when it divides the tile's row count, else the widest
  // that does (a chunk never straddles two k-rows of the shared tile).
  static constexpr int kV = ROWS % VEC == 0 ? VEC : (VEC >= 2 && ROWS % 2 == 0 ? 2 : 1);
  static constexpr int kChunksPerK = ROWS / kV;
  static constexpr int kChunks = BK * kChunksPerK;
  static constexpr int kIters = (kChunks + kThreads - 1) / kThreads;
  static constexpr int kCopies = BK * ROWS;  // cp.async: one element each
  static constexpr int kCopyIters = (kCopies + kThreads - 1) / kThreads;

  const float* __restrict__ src;  // k-row 0, row 0 of this batch element
  int ld;                         // pitch of a k-row (M or N)
  bool vec_ok;                    // ld % kV == 0: chunks are aligned (row0 is a multiple of kV)
  int row0, rows_left;
  float reg[kIters][kV];

  __device__ __forceinline__ MNContiguousTile(const float* base, int pitch)
      : src(base), ld(pitch), vec_ok(pitch % kV == 0), row0(0), rows_left(0) {}

  __device__ __forceinline__ void begin_tile(int first_row, int rows, int) {
    row0 = first_row;
    rows_left = rows;
  }

  // Chunk c of the tile: k-row c / kChunksPerK, rows from (c % kChunksPerK) * kV on.
  __device__ __forceinline__ void fetch(int k0, int k_end, int tid) {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
      for (int e = 0; e < kV; ++e) reg[i][e] = 0.0f;
      const int c = tid + i * kThreads;
      if (kChunks % kThreads != 0 && c >= kChunks) continue;
      const int kk = k0 + c / kChunksPerK;
      const int r = (c % kChunksPerK) * kV;
      if (kk >= k_end) continue;
      const float* p = src + (long long)kk * ld + row0 + r;
      if (kV > 1 && vec_ok && r + kV <= rows_left) {
        load_vector<kV>(p, reg[i]);
      } else {  // the tile's last partial chunk, or a pitch vectors cannot walk
#pragma unroll
        for (int e = 0; e < kV; ++e)
          if (r + e < rows_left) reg[i][e] = p[e];
      }
    }
  }

  __device__ __forceinline__ void store(float* dst, int tid) const {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int c = tid + i * kThreads;
      if (kChunks % kThreads != 0 && c >= kChunks) continue;
      float* d = dst + (c / kChunksPerK) * LD + (c % kChunksPerK) * kV;
      // LD and the offset are multiples of kV: the vector stores are aligned.
      if (kV == 4) {
        float4 t;
        t.x = reg[i][0];
        t.y = reg[i][kV > 1 ? 1 : 0];
        t.z = reg[i][kV > 2 ? 2 : 0];
        t.w = reg[i][kV > 3 ? 3 : 0];
        *reinterpret_cast<float4*>(d) = t;
      } else if (kV == 2) {
        float2 t;
        t.x = reg[i][0];
        t.y = reg[i][kV > 1 ? 1 : 0];
        *reinterpret_cast<float2*>(d) = t;
      } else {
        d[0] = reg[i][0];
      }
    }
  }

  // One 4-byte copy per element; consecutive threads take consecutive rows of a k-row.
  __device__ __forceinline__ void copy_async(float* dst, int k0, int k_end, int tid) {
#pragma unroll
    for (int i = 0; i < kCopyIters; ++i) {
      const int c = tid + i * kThreads;
      if (kCopies % kThreads != 0 && c >= kCopies) continue;
      const int kk = c / ROWS;
      const int r = c % ROWS;
      const bool valid = k0 + kk < k_end && r < rows_left;
      const float* p = src + (long long)(k0 + kk) * ld + row0 + r;
      cp_async_f32(dst + kk * LD + r, valid ? p : src, valid);
    }
  }
};

}  // namespace dc
