// The tensor-core templates' search spaces (float16 / bfloat16 dense and batch_matmul, fp32
// accumulation; which layouts each reads: tensor_core_space_rules.h, dense_tc_space.cc) and the
// geometry their spaces, code generation and tests share:
//   dense_tc     mma.sync.m16n8k16 + ldmatrix + cp.async pipeline, sm_80 and newer
//                (templates/dense_tc.cu)
//   dense_wgmma  warp-specialized wgmma.mma_async with mbarrier pipelines, sm_90a only
//                (templates/dense_wgmma.cu)
#pragma once

#include "space/micro_kernel.h"
#include "space/template_space.h"

namespace dietcode {

const TemplateSpace& dense_tc_space();

// What a dense_tc micro-kernel asks of the GPU, computed exactly as templates/dense_tc.cu does
// (namespace dc), so a launch plan and the kernel agree.
struct DenseTcGeometry {
  int threads = 0;
  int bm = 0, bn = 0;  // block tile: WARPS_M * WM, WARPS_N * WN
  int smem_bytes = 0;  // STAGES * (BM + BN) * BK * 2
  // Registers per thread, an estimate calibrated on ptxas reports: fp32 accumulators
  // (WM * WN / 32), A and B fragments of two k16 steps in flight (WM / 2 + WN / 2) and a fixed
  // share for tile addresses, swizzle offsets and loop state. ptxas has the last word.
  int register_estimate = 0;

  // Throws std::out_of_range when a tunable is missing.
  static DenseTcGeometry of(const MicroKernel& mk);
};

const TemplateSpace& dense_wgmma_space();

// What a dense_wgmma micro-kernel asks of the GPU, as templates/dense_wgmma.cu computes it.
struct DenseWgmmaGeometry {
  int threads = 0;     // 128 * (1 + WG_M): a producer warpgroup and WG_M consumers
  int bm = 0, bn = 0;  // WGM * WG_M (WGM = 64, wgmma's m), BN
  // STAGES * (BM + BN) * 128 bytes of 128-byte-swizzled tiles, 1024 bytes of slack to align them
  // to the swizzle's 1024-byte period, and 1024 for the mbarriers.
  int smem_bytes = 0;
  // Consumer registers per thread: BN / 2 fp32 accumulators plus addresses, descriptors and
  // loop state (calibrated on ptxas reports).
  int register_estimate = 0;

  static DenseWgmmaGeometry of(const MicroKernel& mk);
};

// Whether the GPU has tensor cores for the op's element type that these templates can drive:
// compute capability 8.0 or newer (bf16 mma.sync, cp.async, ldmatrix) and a non-zero tensor
// peak for the type in its spec.
bool gpu_has_tensor_cores_for(const GpuSpec& gpu, DType dtype);

}  // namespace dietcode
