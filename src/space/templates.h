// The micro-kernel templates dietcode ships, one TemplateSpace each (templates/<name>.cu), and
// the geometry of the fp32 SIMT GEMM core (templates/gemm_core_f32.cuh) that dense_f32,
// batch_matmul_f32 and conv2d_f32 share with their spaces, code generation and tests.
#pragma once

#include <string>

#include "space/micro_kernel.h"
#include "space/template_space.h"

namespace dietcode {

const TemplateSpace& dense_f32_space();
const TemplateSpace& batch_matmul_f32_space();  // any transpose combination
const TemplateSpace& conv2d_f32_space();        // NHWC, KRSC weights, implicit GEMM

// The CPU target's templates (templates/x86/ops_x86.h), one per ISA level, each computing every
// fp32 op; and the ISA level a template's kernels are compiled for ("x86-64-v3" for AVX2+FMA,
// "x86-64-v4" for AVX-512), which is also the arch their log records name.
const TemplateSpace& x86_avx2_f32_space();
const TemplateSpace& x86_avx512_f32_space();
// The dot-product form beside them (templates/x86/dot_x86.h): dense and batch_matmul NT only.
const TemplateSpace& x86_avx2_dot_f32_space();
const TemplateSpace& x86_avx512_dot_f32_space();
// The W-broadcast form (templates/x86/wbcast_x86.h): C^T = W X^T with W's rows broadcast in
// place; dense and batch_matmul NT only.
const TemplateSpace& x86_avx2_wbcast_f32_space();
const TemplateSpace& x86_avx512_wbcast_f32_space();
// Which of the three forms an x86 template instantiates (templates/x86/ops_x86.h's tour):
// the BLIS form (run), the dot-product form (run_dot) or the W-broadcast form (run_wbcast).
enum class X86Form { kBlis, kDot, kWbcast };
X86Form x86_form(const std::string& tmpl);
// True for the x86 templates that use 512-bit vectors.
bool x86_is_avx512(const std::string& tmpl);
std::string x86_isa_level(const std::string& tmpl);

// What an fp32 SIMT GEMM micro-kernel asks of the GPU, computed exactly as the core does
// (templates/gemm_core_f32.cuh, namespace dc) so a launch plan and the kernel agree. The name
// is historical: every fp32 SIMT template has this geometry.
struct DenseF32Geometry {
  int threads = 0;
  int bm = 0, bn = 0;    // block tile
  int lda = 0, ldb = 0;  // padded k-row pitch of the shared tiles, in floats
  int smem_bytes = 0;    // dynamic shared memory: STAGES * BK * (lda + ldb) * 4
  // Registers per thread, an upper estimate: accumulators, fragments of two k-steps, loads in
  // flight and their addresses, and a fixed share for indices. ptxas has the last word.
  int register_estimate = 0;
  int a_rows_per_thread = 0;  // rows of an A tile one thread loads per k-tile

  // Throws std::out_of_range when a tunable is missing.
  static DenseF32Geometry of(const MicroKernel& mk);
};

// The row pitch the template pads a k-major tile of `extent` floats to: a multiple of 4 that is
// 4 (mod 8), so a transposing store spreads over the banks and vector reads stay aligned.
int dense_f32_padded_pitch(int extent);

}  // namespace dietcode
