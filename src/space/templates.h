// The micro-kernel templates dietcode ships, one TemplateSpace each (templates/<name>.cu), and
// the geometry of dense_f32 that its space, its code generation and its tests share.
#pragma once

#include "space/micro_kernel.h"
#include "space/template_space.h"

namespace dietcode {

const TemplateSpace& dense_f32_space();

// What a dense_f32 micro-kernel asks of the GPU, computed exactly as the template does
// (templates/dense_f32.cu, namespace dc) so a launch plan and the kernel agree.
struct DenseF32Geometry {
  int threads = 0;
  int bm = 0, bn = 0;    // block tile
  int lda = 0, ldb = 0;  // padded k-row pitch of the shared tiles, in floats
  int smem_bytes = 0;    // dynamic shared memory: STAGES * BK * (lda + ldb) * 4
  // Registers per thread, an upper estimate: accumulators, fragments of two k-steps, loads in
  // flight and their addresses, and a fixed share for indices. ptxas has the last word.
  int register_estimate = 0;

  // Throws std::out_of_range when a tunable is missing.
  static DenseF32Geometry of(const MicroKernel& mk);
};

// The row pitch the template pads a k-major tile of `extent` floats to: a multiple of 4 that is
// 4 (mod 8), so a transposing store spreads over the banks and vector reads stay aligned.
int dense_f32_padded_pitch(int extent);

}  // namespace dietcode
