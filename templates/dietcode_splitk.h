/* Split-K, shared by every template: the part of K a slice sums (k_slice), and the reduction
 * out = finish(sum of the kSplitK fp32 slices of the workspace, added in slice order), so the
 * result never depends on the order in which the slices were written. Each block covers
 * 4 * blockDim.x consecutive outputs of all batch elements (the launch plan's reduce grid), each
 * thread 4 consecutive ones.
 * The template's `finish(offset, col, sum)` applies its epilogue and stores in its element
 * type. The includer has DietcodeArgs in scope.
 * No include guard, like gemm_core_f32.cuh: a host-emulation test includes a template several
 * times, each in its own namespace; every template includes this file exactly once. */

namespace dc {

// The part of K that split-K slice `split` of kSplitK sums, in whole kBK-deep tiles: the
// trailing slices may be empty (num_tiles 0).
struct KSlice {
  int begin, end, num_tiles;
};

template <int kBK, int kSplitK>
__device__ __forceinline__ KSlice k_slice(int k, int split) {
  const int k_tiles = (k + kBK - 1) / kBK;
  const int tiles_per_split = (k_tiles + kSplitK - 1) / kSplitK;
  KSlice s;
  s.begin = split * tiles_per_split * kBK;
  s.end = min(k, s.begin + tiles_per_split * kBK);
  s.num_tiles = s.begin < k ? (s.end - s.begin + kBK - 1) / kBK : 0;
  return s;
}

// Four consecutive fp32 values, for one 16-byte load of a slice.
struct alignas(16) SplitKQuad {
  float v[4];
};

// Each thread sums 4 consecutive outputs: with m * n a multiple of 4 (so the four share a batch
// element and their slices are 16-byte aligned) one 16-byte load per slice, else one load per
// output. The batch element and the column are divided out once per thread, not per output:
// 64-bit divisions are long instruction sequences on a GPU, and with one per output they, not
// memory, bounded the reduction (88 instructions per output on sm_90, BERT fc2 T=128).
template <int kSplitK, typename Finish>
__device__ __forceinline__ void reduce_split_k(const DietcodeArgs& args, long long m, long long n,
                                               Finish finish) {
  const long long mn = m * n;
  const long long total = args.batch * mn;
  const float* ws = static_cast<const float*>(args.workspace);
  const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (first >= total) return;
  long long batch = args.batch == 1 ? 0 : first / mn;
  long long r = first - batch * mn;
  int col = (int)(r % n);
  if (mn % 4 == 0) {  // first % 4 == 0, so r % 4 == 0 and r + 3 < mn: one batch element
    const float* slice = ws + batch * kSplitK * mn + r;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) {  // fixed order: deterministic
      const SplitKQuad q = *reinterpret_cast<const SplitKQuad*>(slice + s * mn);
#pragma unroll
      for (int j = 0; j < 4; ++j) sum[j] += q.v[j];
    }
    const long long out = batch * args.stride_c + r;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      finish(out + j, col, sum[j]);
      col = col + 1 == n ? 0 : col + 1;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (first + j >= total) return;
    if (r == mn) {  // the next batch element
      ++batch;
      r = 0;
      col = 0;
    }
    const float* slice = ws + batch * kSplitK * mn + r;
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) sum += slice[s * mn];  // fixed order: deterministic
    finish(batch * args.stride_c + r, col, sum);
    ++r;
    col = col + 1 == n ? 0 : col + 1;
  }
}

}  // namespace dc
