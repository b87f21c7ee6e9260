// Building blocks of the tensor-core templates (dense_tc.cu, dense_wgmma.cu): the tunables
// both take (DTYPE, EPILOGUE, SPLITK), the 16-bit element type, conversions, the fused
// epilogue, inline PTX for cp.async, ldmatrix and mma.sync, and the entries' common plumbing
// (output stores, the split-K reduction). No CUDA headers: NVRTC compiles this with nothing but
// the toolkit's builtins, which keeps a compile at a fraction of a second.
//
// DTYPE selects the element type: 1 = IEEE binary16 (f16), 2 = bfloat16. Elements travel as raw
// 16-bit patterns (elem_t); arithmetic is fp32 (mma accumulates in fp32, the epilogue runs in
// fp32) and results are rounded to the element type once, to nearest even.
//
// Shared-memory addresses are 32-bit offsets in the shared window (what ldmatrix, cp.async and
// wgmma descriptors take), so address arithmetic stays in 32-bit registers.
//
// DIETCODE_HOST_EMULATION is a test double only: a CPU test compiles the templates as C++ and
// supplies dc_emu_* functions (tests/nvrtc/tc_emulation.h) that carry out each instruction with
// the lane-to-fragment layouts the PTX ISA documents, exchanging operands between the lanes of a
// warp. It checks the kernels' indexing, swizzles, padding and pipelines without a GPU.
#ifndef DIETCODE_TC_H_
#define DIETCODE_TC_H_

#include "dietcode_args.h"
#include "dietcode_extents.h"
#include "dietcode_splitk.h"

#ifndef DTYPE
#define DTYPE 2  // 1 f16, 2 bf16
#endif
#ifndef EPILOGUE
#define EPILOGUE 0  // 0 none, 1 bias, 2 relu, 3 bias_relu, 4 gelu (tanh form), 5 bias_gelu
#endif
#ifndef SPLITK
#define SPLITK 1  // K slices, summed by the template's reduction entry
#endif
#if DTYPE != 1 && DTYPE != 2
#error "DTYPE must be 1 (float16) or 2 (bfloat16)"
#endif
#if EPILOGUE < 0 || EPILOGUE > 5
#error "EPILOGUE must be in 0..5"
#endif
#if SPLITK < 1 || SPLITK > 16
#error "SPLITK must be in 1..16"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the tensor-core templates need sm_80 or newer (bf16 mma, cp.async, ldmatrix)"
#endif

#include "dietcode_activation.h"

namespace dc {

typedef unsigned short elem_t;  // the raw bits of one f16 or bf16 element

// ---- Conversions -------------------------------------------------------------------------
__device__ __forceinline__ float to_float(elem_t h) {
#if defined(DIETCODE_HOST_EMULATION)
  return dc_emu_to_float(h, DTYPE);
#elif DTYPE == 1
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return __uint_as_float((unsigned)h << 16);  // bf16 is the top half of an fp32
#endif
}

__device__ __forceinline__ elem_t from_float(float v) {
#if defined(DIETCODE_HOST_EMULATION)
  return dc_emu_from_float(v, DTYPE);
#else
  elem_t h;
#if DTYPE == 1
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
#else
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
#endif
  return h;
#endif
}

// Two floats rounded and packed into 32 bits: lo at the lower address (the low half).
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
#if defined(DIETCODE_HOST_EMULATION)
  return (unsigned)dc_emu_from_float(lo, DTYPE) | ((unsigned)dc_emu_from_float(hi, DTYPE) << 16);
#else
  unsigned r;
  // The first source of cvt.rn.{f16,bf16}x2.f32 lands in the upper half.
#if DTYPE == 1
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
#endif
}

// ---- Epilogue ----------------------------------------------------------------------------
// bias_value is bias[n] already converted (ignored when the epilogue has no bias).
__device__ __forceinline__ float apply_epilogue(float v, float bias_value) {
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
  v += bias_value;
#else
  (void)bias_value;
#endif
  return activate(v);
}

__device__ __forceinline__ float bias_at(const elem_t* __restrict__ bias, int n) {
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
  return to_float(bias[n]);
#else
  (void)bias;
  (void)n;
  return 0.0f;
#endif
}

// ---- Shared memory -----------------------------------------------------------------------
__device__ __forceinline__ unsigned shared_address(const void* p) {
#if defined(DIETCODE_HOST_EMULATION)
  return dc_emu_shared_offset(p);
#else
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
#endif
}

// 16 bytes global -> shared, or 16 zero bytes when !valid (a source size of 0 reads nothing;
// src must still be a mapped address, so callers pass the tile's base pointer then).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_cp_async16(dst, src, valid ? 16 : 0);
#else
  asm volatile(
      "{ .reg .u64 g; cvta.to.global.u64 g, %1; cp.async.cg.shared.global [%0], [g], 16, %2; }\n" ::
          "r"(dst),
      "l"(src), "r"(valid ? 16 : 0)
      : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// ---- ldmatrix and mma.sync ---------------------------------------------------------------
// ldmatrix .x4 / .x2 (no transpose): lane l names row l % 8 of matrix l / 8; every lane receives
// from each matrix the 32-bit word at row lane / 4, columns 2 * (lane % 4) and + 1. volatile:
// they read shared memory that cp.async filled, which the compiler cannot see.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_ldmatrix(r, 4, addr);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], unsigned addr) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_ldmatrix(r, 2, addr);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
#endif
}

// ldmatrix .x4 / .x2 .trans: the same rows are named, but every lane receives from each matrix
// the word at column lane / 4, rows 2 * (lane % 4) and + 1: an 8x8 tile stored [k][n] arrives
// as mma's column-major B fragment.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_ldmatrix_trans(r, 4, addr);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], unsigned addr) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_ldmatrix_trans(r, 2, addr);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
#endif
}

// d += a . b for one 16x8x16 tile: a row-major 16x16 (4 words), b column-major 16x8 (2 words),
// d fp32 16x8 (4 floats): d[0..1] row lane/4, d[2..3] row lane/4 + 8, columns 2*(lane%4) + 0/1.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4],
                                          const unsigned (&b)[2]) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mma16816(d, a, b, DTYPE);
#else
  asm(
#if DTYPE == 1
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#else
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
#endif
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// ---- Output stores -----------------------------------------------------------------------
// Two adjacent outputs (columns col, col + 1 of one row) after the epilogue. Packed into one
// 32-bit store when both exist and the pair is 4-byte aligned (row pitch n even); otherwise one
// guarded 16-bit store each.
__device__ __forceinline__ void store_pair(elem_t* __restrict__ out, long long row_offset, int col,
                                           int n, bool packed_ok, float v0, float v1) {
  if (packed_ok && col + 1 < n) {
    *reinterpret_cast<unsigned*>(out + row_offset + col) = pack2(v0, v1);
  } else {
    if (col < n) out[row_offset + col] = from_float(v0);
    if (col + 1 < n) out[row_offset + col + 1] = from_float(v1);
  }
}

// Raw fp32 partial sums of a split-K slice: an 8-byte store when aligned (n even).
__device__ __forceinline__ void store_partial_pair(float* __restrict__ out, long long row_offset,
                                                   int col, int n, bool packed_ok, float v0,
                                                   float v1) {
  if (packed_ok && col + 1 < n) {
    *reinterpret_cast<float2*>(out + row_offset + col) = make_float2(v0, v1);
  } else {
    if (col < n) out[row_offset + col] = v0;
    if (col + 1 < n) out[row_offset + col + 1] = v1;
  }
}

// Where a block's results go: with split-K, this slice's raw fp32 sums in
// workspace[batch][kSplitK][M][N]; otherwise Y of this batch element, through the epilogue.
template <int kSplitK>
struct OutputStore {
  const elem_t* bias;
  float* partial;
  elem_t* out;
  int n;
  bool packed_ok;

  __device__ __forceinline__ OutputStore(const DietcodeArgs& args, int batch, int split, int m,
                                         int n_)
      : bias(static_cast<const elem_t*>(args.bias)),
        partial(kSplitK > 1 ? static_cast<float*>(args.workspace) +
                                  (long long)(batch * kSplitK + split) * m * n_
                            : nullptr),
        out(static_cast<elem_t*>(args.c) + batch * args.stride_c),
        n(n_),
        packed_ok(n_ % 2 == 0) {}

  // The accumulators of columns col and col + 1 of the row at row_offset (row * N); columns
  // past N are dropped.
  __device__ __forceinline__ void pair(long long row_offset, int col, float v0, float v1) const {
    if (kSplitK > 1) {
      store_partial_pair(partial, row_offset, col, n, packed_ok, v0, v1);
    } else if (col < n) {
      const float b0 = bias_at(bias, col);
      const float b1 = col + 1 < n ? bias_at(bias, col + 1) : 0.0f;
      store_pair(out, row_offset, col, n, packed_ok, apply_epilogue(v0, b0),
                 apply_epilogue(v1, b1));
    }
  }
};

// ---- Split-K reduction ---------------------------------------------------------------------
// Y = epilogue(sum of the kSplitK fp32 slices in slice order), rounded to the element type;
// the summing loop is shared with every template (dietcode_splitk.h).
template <int kSplitK>
__device__ __forceinline__ void reduce_partials(const DietcodeArgs& args) {
#ifdef STATIC_N
  const long long n = STATIC_N;
#else
  const long long n = args.n;
#endif
  const elem_t* bias = static_cast<const elem_t*>(args.bias);
  elem_t* c = static_cast<elem_t*>(args.c);
  reduce_split_k<kSplitK>(args, args.m, n, [&](long long offset, int col, float sum) {
    c[offset] = from_float(apply_epilogue(sum, bias_at(bias, col)));
  });
}

}  // namespace dc

#endif  // DIETCODE_TC_H_
