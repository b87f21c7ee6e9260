/* Tensor maps for kernels with a TMA producer (dense_wgmma with PRODUCER=1): such a kernel takes
 * DietcodeArgs and then, by value (as __grid_constant__ parameters), one CUtensorMap for A and
 * one for B. The host encodes them for every launch from the call's pointers and shape.
 *
 * Shared by the pack's loader runtime and dietcode's measurer, so the tuner measures exactly the
 * launches a pack makes; plain C++ that needs only the driver API's types (cuda.h,
 * cudaTypedefs.h) and dietcode_args.h.
 *
 * The view: a K-major 16-bit operand (A = X[M,K], B = W[N,K]) as a 3-D tensor, innermost first
 * (k, row, batch element), rows K elements apart and batch elements `stride_a` / `stride_b`
 * apart, copied in boxes of box_k x box_rows elements (box_k * 2 = 128 bytes: one row of the
 * 128-byte swizzle the wgmma descriptors read). Rows past M (N), columns past K and batch
 * elements past `batch` read as zeros: that is the kernel's local padding.
 */
#ifndef DIETCODE_PACK_TENSOR_MAPS_H_
#define DIETCODE_PACK_TENSOR_MAPS_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "dietcode_args.h"

namespace dietcode_pack {

/* A kernel that takes tensor maps takes exactly these, A's first. */
constexpr int kTensorMapA = 0;
constexpr int kTensorMapB = 1;
constexpr int kTensorMaps = 2;

/* Everything cuTensorMapEncodeTiled is told about one operand. */
struct TensorMapLayout {
  const void* base;
  cuuint64_t dims[3];    /* k, rows, batch */
  cuuint64_t strides[2]; /* bytes from one row to the next, from one batch element to the next */
  cuuint32_t box[3];     /* box_k, box_rows, 1 */
};

/* The TMA's limits (CUDA driver API, cuTensorMapEncodeTiled). */
constexpr uint64_t kTmaMaxStride = uint64_t(1) << 40;
constexpr uint64_t kTmaMaxDim = uint64_t(1) << 32;
constexpr uint32_t kTmaMaxBox = 256;
constexpr uint32_t kTmaSwizzleBytes = 128;

/* The layout of operand `which` (kTensorMapA or kTensorMapB) of a call, boxes of box_rows x box_k
 * elements of elem_bytes each. Returns NULL, or why the TMA cannot address the operand (then
 * `out` is unspecified): the base must be 16-byte aligned, strides multiples of 16 bytes and
 * below 2^40, extents below 2^32, box_k * elem_bytes exactly the 128-byte swizzle span. */
inline const char* tensor_map_layout(int which, const DietcodeArgs& a, int box_rows, int box_k,
                                     int elem_bytes, TensorMapLayout* out) {
  if (which != kTensorMapA && which != kTensorMapB) return "no such operand";
  if (box_rows < 1 || uint32_t(box_rows) > kTmaMaxBox) return "box rows outside 1..256";
  if (elem_bytes != 2 || uint32_t(box_k * elem_bytes) != kTmaSwizzleBytes)
    return "box row is not one 128-byte swizzle span of 16-bit elements";
  const bool is_a = which == kTensorMapA;
  const void* base = is_a ? a.a : a.b;
  const long long rows = is_a ? a.m : a.n;
  const long long batch_stride = is_a ? a.stride_a : a.stride_b;
  if (a.k < 1 || rows < 1 || a.batch < 1) return "an extent is not positive";
  if (uint64_t(a.k) >= kTmaMaxDim || uint64_t(rows) >= kTmaMaxDim ||
      uint64_t(a.batch) >= kTmaMaxDim)
    return "an extent is 2^32 or more";
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) return "the operand is not 16-byte aligned";
  const uint64_t row_bytes = uint64_t(a.k) * uint64_t(elem_bytes);
  if (row_bytes % 16 != 0) return "rows are not a multiple of 16 bytes apart (K % 8 != 0)";
  if (row_bytes >= kTmaMaxStride) return "rows are 2^40 bytes or more apart";
  /* One batch element: its stride is never read, so give the one a packed tensor has. */
  uint64_t batch_bytes = row_bytes * uint64_t(rows);
  if (a.batch > 1) {
    if (batch_stride < 1) return "batch elements share storage (stride 0)";
    batch_bytes = uint64_t(batch_stride) * uint64_t(elem_bytes);
  }
  if (batch_bytes % 16 != 0) return "batch elements are not a multiple of 16 bytes apart";
  if (batch_bytes >= kTmaMaxStride) return "batch elements are 2^40 bytes or more apart";
  out->base = base;
  out->dims[0] = cuuint64_t(a.k);
  out->dims[1] = cuuint64_t(rows);
  out->dims[2] = cuuint64_t(a.batch);
  out->strides[0] = row_bytes;
  out->strides[1] = batch_bytes;
  out->box[0] = cuuint32_t(box_k);
  out->box[1] = cuuint32_t(box_rows);
  out->box[2] = 1;
  return nullptr;
}

/* The layouts of both maps of a call to a kernel whose launch plan has tma_box_k = box_k > 0:
 * A in boxes of tile_m rows, B in boxes of tile_n rows. Returns NULL, or why the TMA cannot
 * address operand *refused (kTensorMapA or kTensorMapB). */
inline const char* gemm_tensor_map_layouts(const DietcodeArgs& a, int tile_m, int tile_n, int box_k,
                                           int elem_bytes, TensorMapLayout out[kTensorMaps],
                                           int* refused) {
  for (int which = 0; which < kTensorMaps; ++which) {
    const int rows = which == kTensorMapA ? tile_m : tile_n;
    if (const char* why = tensor_map_layout(which, a, rows, box_k, elem_bytes, &out[which])) {
      *refused = which;
      return why;
    }
  }
  return nullptr;
}

/* Encodes a layout: 16-bit elements (the copy converts nothing, so f16 and bf16 alike), no
 * interleave, the 128-byte swizzle, L2 promotion in 256-byte lines, and out-of-bounds elements
 * filled with zeros (FLOAT_OOB_FILL_NONE), which is what makes the padding free. */
inline CUresult encode_tensor_map(PFN_cuTensorMapEncodeTiled_v12000 encode,
                                  const TensorMapLayout& l, CUtensorMap* out) {
  const cuuint32_t element_strides[3] = {1, 1, 1};
  return encode(out, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, const_cast<void*>(l.base), l.dims,
                l.strides, l.box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_TENSOR_MAPS_H_ */
