/* GEMM extents shared by every template: compile-time constants when the variant is generated
 * with STATIC_M, STATIC_N or STATIC_K, else the arguments'. Inlined, so a constant folds
 * through every use just as a constexpr local would. The includer has DietcodeArgs in scope.
 * No include guard, like dietcode_splitk.h: a host-emulation test includes a template several
 * times, each in its own namespace; every template includes this file exactly once. */

namespace dc {

__device__ __forceinline__ int extent_m(const DietcodeArgs& args) {
#ifdef STATIC_M
  return STATIC_M;
#else
  return (int)args.m;
#endif
}
__device__ __forceinline__ int extent_n(const DietcodeArgs& args) {
#ifdef STATIC_N
  return STATIC_N;
#else
  return (int)args.n;
#endif
}
__device__ __forceinline__ int extent_k(const DietcodeArgs& args) {
#ifdef STATIC_K
  return STATIC_K;
#else
  return (int)args.k;
#endif
}

}  // namespace dc
