// batch_matmul_f32: Y[b,M,N] = epilogue(A[b,M,K] . B[b,K,N]) in fp32 SIMT FMA, with either
// operand stored transposed. Compiled by NVRTC only.
//
// The micro-kernel (tiles, pipelines, split-K, epilogues, local padding, launch geometry) is
// the shared fp32 GEMM core, gemm_core_f32.cuh; read its guided tour first. This file only
// picks a tile loader per operand from its layout (gemm_tiles_f32.cuh):
//   A_K_CONTIGUOUS 1: A stored [b][M][K] (KContiguousTile, loads along K, transposing store)
//                  0: transpose_a, A stored [b][K][M] (MNContiguousTile, loads along M)
//   B_K_CONTIGUOUS 0: B stored [b][K][N] (MNContiguousTile, loads along N)
//                  1: transpose_b, B stored [b][N][K] (KContiguousTile, loads along K)
// Batch element b = blockIdx.z / SPLITK starts at a + b*stride_a, b + b*stride_b and
// c + b*stride_c (elements). Any of B, M, N, K may be dynamic: code generation passes STATIC_M,
// STATIC_N, STATIC_K for the constant ones, and VEC=1 when a static pitch that vector loads
// walk (K for a K-contiguous operand, M or N otherwise) is not a multiple of VEC. A dynamic
// pitch that is not a multiple falls back to scalar loads at run time.

#include "dietcode_args.h"
#include "gemm_core_f32.cuh"
#include "gemm_tiles_f32.cuh"

#ifndef A_K_CONTIGUOUS
#define A_K_CONTIGUOUS 1
#endif
#ifndef B_K_CONTIGUOUS
#define B_K_CONTIGUOUS 0
#endif

#if A_K_CONTIGUOUS || B_K_CONTIGUOUS
#if defined(STATIC_K) && (STATIC_K % VEC != 0)
#error "STATIC_K must be a multiple of VEC (code generation passes VEC=1 otherwise)"
#endif
#endif
#if !A_K_CONTIGUOUS && defined(STATIC_M) && (STATIC_M % VEC != 0)
#error "STATIC_M must be a multiple of VEC when A is stored [K][M]"
#endif
#if !B_K_CONTIGUOUS && defined(STATIC_N) && (STATIC_N % VEC != 0)
#error "STATIC_N must be a multiple of VEC when B is stored [K][N]"
#endif

extern "C" __global__ void __launch_bounds__(dc::kThreads, MIN_BLOCKS)
    dietcode_batch_matmul_f32(DietcodeArgs args) {
  extern __shared__ float4 dc_smem[];  // float4: 16-byte alignment for the vector reads
  const int batch = dc::block_batch();
  const int m = dc::extent_m(args), n = dc::extent_n(args), k = dc::extent_k(args);
  const float* a = static_cast<const float*>(args.a) + batch * args.stride_a;
  const float* b = static_cast<const float*>(args.b) + batch * args.stride_b;
#if A_K_CONTIGUOUS
  dc::KContiguousTile<dc::kBM, dc::kLDA> ta(a, k);
#else
  dc::MNContiguousTile<dc::kBM, dc::kLDA> ta(a, m);
#endif
#if B_K_CONTIGUOUS
  dc::KContiguousTile<dc::kBN, dc::kLDB> tb(b, k);
#else
  dc::MNContiguousTile<dc::kBN, dc::kLDB> tb(b, n);
#endif
  dc::gemm_block(args, reinterpret_cast<float*>(dc_smem), m, n, k, ta, tb);
}

// Split-K reduction (see split_k_reduce); launched only when SPLITK > 1.
extern "C" __global__ void __launch_bounds__(256)
    dietcode_batch_matmul_f32_reduce(DietcodeArgs args) {
  dc::split_k_reduce(args);
}
