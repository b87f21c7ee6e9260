// dense_f32: Y[M,N] = epilogue(X[M,K] . W[N,K]^T (+ bias[N])) in fp32 SIMT FMA.
// Compiled by NVRTC only.
//
// The micro-kernel itself (tiles, pipelines, split-K, epilogues, local padding, launch
// geometry) is the shared fp32 GEMM core, gemm_core_f32.cuh; read its guided tour first.
// What is dense-specific is only the operands: both X and W are K-contiguous matrices, so both
// go through KContiguousTile (gemm_tiles_f32.cuh), whose loads run along K and whose store
// transposes into the k-major shared layout. W is shared by every batch element (its batch
// stride is 0 for a dense layer).
//
// Code generation passes STATIC_N and STATIC_K for constant dimensions (M always varies), and
// VEC=1 when a static K is not a multiple of VEC.

#include "dietcode_args.h"
#include "gemm_core_f32.cuh"
#include "gemm_tiles_f32.cuh"

#if defined(STATIC_K) && (STATIC_K % VEC != 0)
#error "STATIC_K must be a multiple of VEC (code generation passes VEC=1 otherwise)"
#endif

extern "C" __global__ void __launch_bounds__(dc::kThreads, MIN_BLOCKS)
    dietcode_dense_f32(DietcodeArgs args) {
  extern __shared__ float4 dc_smem[];  // float4: 16-byte alignment for the vector reads
  const int batch = dc::block_batch();
  const int k = dc::extent_k(args);
  dc::KContiguousTile<dc::kBM, dc::kLDA> a(
      static_cast<const float*>(args.a) + batch * args.stride_a, k);
  dc::KContiguousTile<dc::kBN, dc::kLDB> b(
      static_cast<const float*>(args.b) + batch * args.stride_b, k);
  dc::gemm_block(args, reinterpret_cast<float*>(dc_smem), dc::extent_m(args), dc::extent_n(args), k,
                 a, b);
}

// Split-K reduction (see split_k_reduce); launched only when SPLITK > 1.
extern "C" __global__ void __launch_bounds__(256) dietcode_dense_f32_reduce(DietcodeArgs args) {
  dc::split_k_reduce(args);
}
