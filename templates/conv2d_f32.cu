// conv2d_f32: Y[N,P,Q,K] = epilogue(conv(X[N,H,W,C], Wt[K,R,S,C]) (+ bias[K])), NHWC, in fp32
// SIMT FMA, as an implicit GEMM. Compiled by NVRTC only.
//
// The GEMM: one row per output pixel (M = N*P*Q, row = (n*P + p)*Q + q), one column per filter
// (N = K), and the reduction runs over the filter window and the channels (K = R*S*C, column
// = (r*S + s)*C + c, the order of the KRSC weights). So the weights are exactly a K-contiguous
// matrix Wt[K][R*S*C] (KContiguousTile), and Y[N,P,Q,K] is exactly C[M][N]. Only A is special:
// element (row, column) is X[n, p*stride_h - pad_h + r*dilation_h, q*stride_w - pad_w +
// s*dilation_w, c], or zero where that falls into the padding. ConvNhwcTile gathers it.
//
// The micro-kernel (tiles, pipelines, split-K, epilogues, local padding, launch geometry) is
// the shared fp32 GEMM core, gemm_core_f32.cuh; read its guided tour first.
//
// Geometry: CONV_STRIDE_H/W, CONV_PAD_H/W, CONV_DILATION_H/W (the op's attributes; code
// generation always passes them) and STATIC_H, STATIC_W, STATIC_C, STATIC_S, STATIC_P,
// STATIC_Q for constant extents; what is not defined comes from the arguments' conv fields.
// STATIC_N (= K filters) and STATIC_K (= R*S*C) are the GEMM's, as in every template. The
// batch N is normally the dynamic one and enters only through M. Vector loads of A run along
// C: they need C % VEC == 0 (code generation passes VEC=1 when a static C is not a multiple).

#include "dietcode_args.h"
#include "gemm_core_f32.cuh"
#include "gemm_tiles_f32.cuh"

#if defined(STATIC_C) && (STATIC_C % VEC != 0)
#error "STATIC_C must be a multiple of VEC (code generation passes VEC=1 otherwise)"
#endif
#if defined(STATIC_K) && (STATIC_K % VEC != 0)
#error "STATIC_K must be a multiple of VEC (code generation passes VEC=1 otherwise)"
#endif

namespace dc {

// The parts of the convolution the A loader reads; constants fold in where defined.
struct ConvGeometry {
  int h, w, c, s, p, q;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

__device__ __forceinline__ ConvGeometry conv_geometry(const DietcodeArgs& args) {
  ConvGeometry g;
#ifdef STATIC_H
  g.h = STATIC_H;
#else
  g.h = args.conv_h;
#endif
#ifdef STATIC_W
  g.w = STATIC_W;
#else
  g.w = args.conv_w;
#endif
#ifdef STATIC_C
  g.c = STATIC_C;
#else
  g.c = args.conv_c;
#endif
#ifdef STATIC_S
  g.s = STATIC_S;
#else
  g.s = args.conv_s;
#endif
#ifdef STATIC_P
  g.p = STATIC_P;
#else
  g.p = args.conv_p;
#endif
#ifdef STATIC_Q
  g.q = STATIC_Q;
#else
  g.q = args.conv_q;
#endif
#ifdef CONV_STRIDE_H
  g.stride_h = CONV_STRIDE_H;
#else
  g.stride_h = args.stride_h;
#endif
#ifdef CONV_STRIDE_W
  g.stride_w = CONV_STRIDE_W;
#else
  g.stride_w = args.stride_w;
#endif
#ifdef CONV_PAD_H
  g.pad_h = CONV_PAD_H;
#else
  g.pad_h = args.pad_h;
#endif
#ifdef CONV_PAD_W
  g.pad_w = CONV_PAD_W;
#else
  g.pad_w = args.pad_w;
#endif
#ifdef CONV_DILATION_H
  g.dilation_h = CONV_DILATION_H;
#else
  g.dilation_h = args.dilation_h;
#endif
#ifdef CONV_DILATION_W
  g.dilation_w = CONV_DILATION_W;
#else
  g.dilation_w = args.dilation_w;
#endif
  return g;
}

// A of the implicit GEMM, gathered from the NHWC input. Rows are walked as in KContiguousTile
// (a thread keeps one column offset and visits rows kRowStep apart), so the per-row work —
// splitting the row into (n, p, q) — happens once per output tile, and the per-column work —
// splitting the column into a filter tap (r, s, c) — once per k-tile.
template <int ROWS, int LD>
struct ConvNhwcTile {
  using Walk = TileWalk<ROWS, kWalkChunk>;
  // Window origin of a row past M: far enough below 0 that no filter tap brings it back.
  static constexpr int kNoRow = -(1 << 29);

  const float* __restrict__ x;
  ConvGeometry g;
  bool vec_ok;  // C % VEC == 0: a chunk of VEC columns is VEC adjacent aligned channels
  // Per row of this thread: the window origin (hb, wb), negative inside the top/left padding,
  // and its pixel index (n*H + hb)*W + wb. 32-bit pixel indices keep three registers per row
  // (a 64-bit address would take four, and spill the largest tiles); the space keeps
  // N*H*W below 2^31, and an element offset is widened to 64 bits before the multiply by C.
  int pix[Walk::kIters], hb[Walk::kIters], wb[Walk::kIters];
  float reg[Walk::kIters][VEC];

  __device__ __forceinline__ ConvNhwcTile(const float* input, const ConvGeometry& geometry)
      : x(input), g(geometry), vec_ok(geometry.c % VEC == 0) {}

  __device__ __forceinline__ void begin_tile(int row0, int rows_left, int tid) {
    const int r0 = tid / Walk::kChunksPerRow;
    const int pq = g.p * g.q;
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i) {
      const int r = r0 + i * Walk::kRowStep;
      hb[i] = kNoRow, wb[i] = 0, pix[i] = 0;
      if (!Walk::in_tile(i, r0) || r >= rows_left) continue;
      const int row = row0 + r;
      const int n = row / pq;
      const int rest = row - n * pq;
      const int p = rest / g.q;
      const int q = rest - p * g.q;
      hb[i] = p * g.stride_h - g.pad_h;
      wb[i] = q * g.stride_w - g.pad_w;
      pix[i] = (n * g.h + hb[i]) * g.w + wb[i];
    }
  }

  // The filter tap of column gk: its offsets inside the window, in pixels from the window's
  // origin, and its channel.
  struct Tap {
    int dh, dw, pixel, c;
  };
  __device__ __forceinline__ Tap tap(int gk) const {
    const int c = gk % g.c;
    const int rs = gk / g.c;
    const int r = rs / g.s;
    const int s = rs - r * g.s;
    Tap t;
    t.dh = r * g.dilation_h;
    t.dw = s * g.dilation_w;
    t.pixel = t.dh * g.w + t.dw;
    t.c = c;
    return t;
  }

  __device__ __forceinline__ const float* address(int i, const Tap& t) const {
    return x + (long long)(pix[i] + t.pixel) * g.c + t.c;
  }

  // Whether row i reads inside the image at this tap (rows past M never do).
  __device__ __forceinline__ bool inside(int i, const Tap& t) const {
    return (unsigned)(hb[i] + t.dh) < (unsigned)g.h && (unsigned)(wb[i] + t.dw) < (unsigned)g.w;
  }

  __device__ __forceinline__ void fetch(int k0, int k_end, int tid) {
    const int r0 = tid / Walk::kChunksPerRow;
    const int gk = k0 + (tid % Walk::kChunksPerRow) * VEC;
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i)
#pragma unroll
      for (int e = 0; e < VEC; ++e) reg[i][e] = 0.0f;
    if (VEC == 1 || vec_ok) {
      // C % VEC == 0: a chunk lies inside one tap, and K = R*S*C keeps it all in or all out.
      if (gk >= k_end) return;
      const Tap t = tap(gk);
#pragma unroll
      for (int i = 0; i < Walk::kIters; ++i)
        if (Walk::in_tile(i, r0) && inside(i, t)) load_vector<VEC>(address(i, t), reg[i]);
    } else {
      // A runtime C that VEC does not divide: every column is its own tap.
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        if (gk + e >= k_end) continue;
        const Tap t = tap(gk + e);
#pragma unroll
        for (int i = 0; i < Walk::kIters; ++i)
          if (Walk::in_tile(i, r0) && inside(i, t)) reg[i][e] = *address(i, t);
      }
    }
  }

  __device__ __forceinline__ void store(float* dst, int tid) const {
    store_k_rows<ROWS, LD>(reg, dst, tid);
  }

  __device__ __forceinline__ void copy_async(float* dst, int k0, int k_end, int tid) {
    const int r0 = tid / BK;
    const int k = tid % BK;
    const bool k_ok = k0 + k < k_end;
    const Tap t = tap(k0 + k);
    float* d = dst + k * LD + r0;
#pragma unroll
    for (int i = 0; i < Walk::kIters; ++i) {
      if (!Walk::in_tile(i, r0)) continue;
      const bool valid = k_ok && inside(i, t);
      cp_async_f32(d + i * Walk::kRowStep, valid ? address(i, t) : x, valid);
    }
  }
};

}  // namespace dc

extern "C" __global__ void __launch_bounds__(dc::kThreads, MIN_BLOCKS)
    dietcode_conv2d_f32(DietcodeArgs args) {
  extern __shared__ float4 dc_smem[];  // float4: 16-byte alignment for the vector reads
  const int k = dc::extent_k(args);
  dc::ConvNhwcTile<dc::kBM, dc::kLDA> a(static_cast<const float*>(args.a), dc::conv_geometry(args));
  dc::KContiguousTile<dc::kBN, dc::kLDB> b(static_cast<const float*>(args.b), k);
  dc::gemm_block(args, reinterpret_cast<float*>(dc_smem), dc::extent_m(args), dc::extent_n(args), k,
                 a, b);
}

// Split-K reduction (see split_k_reduce); launched only when SPLITK > 1.
extern "C" __global__ void __launch_bounds__(256) dietcode_conv2d_f32_reduce(DietcodeArgs args) {
  dc::split_k_reduce(args);
}
