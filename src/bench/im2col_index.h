// The index math of bench's im2col kernel, written once and compiled twice: as CUDA in the
// NVRTC source of bench's helper kernels (bench_kernels.cc stringizes the macro below) and as
// host C++ here, so the host tests check exactly the arithmetic the GPU runs.
//
// im2col turns conv2d (NHWC input X[N,H,W,C], KRSC weights) into the dense GEMM
// Y[M = N*P*Q, K] = col[M, R*S*C] * Wt[K, R*S*C]^T, the implicit GEMM of templates/conv2d_f32.cu
// made explicit: row (n*P + p)*Q + q, column (r*S + s)*C + c holds
// X[n, p*stride_h - pad_h + r*dilation_h, q*stride_w - pad_w + s*dilation_w, c], or zero
// where that falls into the padding.
#pragma once

// Defines dietcode_im2col_source(i, ...): the X element that col element i (row-major,
// gemm_k = R*S*C columns) copies, or -1 for padding. QUALIFIERS: "inline" on the host,
// "__device__ __forceinline__" on the GPU. No comments inside: it is stringized.
#define DIETCODE_IM2COL_INDEX_FUNCTION(QUALIFIERS)                                                \
  QUALIFIERS long long dietcode_im2col_source(long long i, long long gemm_k, long long c,         \
                                              long long s, long long p, long long q, long long h, \
                                              long long w, int stride_h, int stride_w, int pad_h, \
                                              int pad_w, int dilation_h, int dilation_w) {        \
    const long long row = i / gemm_k, column = i % gemm_k;                                        \
    const long long ci = column % c, rs = column / c, si = rs % s, ri = rs / s;                   \
    const long long qi = row % q, np = row / q, pi = np % p, ni = np / p;                         \
    const long long hi = pi * stride_h - pad_h + ri * dilation_h;                                 \
    const long long wi = qi * stride_w - pad_w + si * dilation_w;                                 \
    if (hi < 0 || hi >= h || wi < 0 || wi >= w) return -1;                                        \
    return ((ni * h + hi) * w + wi) * c + ci;                                                     \
  }

#define DIETCODE_STRINGIZE_ARGS(...) #__VA_ARGS__
#define DIETCODE_STRINGIZE_EXPANDED(...) DIETCODE_STRINGIZE_ARGS(__VA_ARGS__)

namespace dietcode {
DIETCODE_IM2COL_INDEX_FUNCTION(inline)
}  // namespace dietcode
