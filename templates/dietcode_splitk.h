/* Split-K, shared by every template: the part of K a slice sums (k_slice), and the reduction
 * out = finish(sum of the kSplitK fp32 slices of the workspace, added in slice order), so the
 * result never depends on the order in which the slices were written. Each block covers
 * 4 * blockDim.x consecutive outputs of all batch elements (the launch plan's reduce grid).
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

template <int kSplitK, typename Finish>
__device__ __forceinline__ void reduce_split_k(const DietcodeArgs& args, long long m, long long n,
                                               Finish finish) {
  const long long mn = m * n;
  const long long total = args.batch * mn;
  const float* ws = static_cast<const float*>(args.workspace);
  const long long first = (long long)blockIdx.x * blockDim.x * 4 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const long long e = first + (long long)j * blockDim.x;
    if (e >= total) return;
    const long long batch = e / mn;
    const long long r = e - batch * mn;
    const float* slice = ws + batch * kSplitK * mn + r;
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) sum += slice[s * mn];  // fixed order: deterministic
    finish(batch * args.stride_c + r, (int)(r % n), sum);
  }
}

}  // namespace dc
