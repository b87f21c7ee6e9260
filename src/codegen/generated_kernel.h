// What code generation produces for one (operator, micro-kernel): the CUDA C++ source that
// NVRTC compiles, and the launch plan that both the tuner's measurer and the pack's loader
// runtime follow. Every kernel takes one DietcodeArgs by value (templates/dietcode_args.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "space/gpu_spec.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

// How to launch a generated kernel for a concrete GemmShape:
//   grid = (ceil(N / tile_n), min(ceil(ceil(M / tile_m) / m_tiles_per_block), 65535),
//           batch * split_k), block = threads
// (kernels loop over M tiles gridDim.y apart, so any M is covered), then, when
// reduce_entry is set, the split-K reduction kernel over the workspace:
//   grid = (ceil(batch * M * N / (4 * reduce_threads)), 1, 1), block = reduce_threads.
struct LaunchPlan {
  std::string entry;  // extern "C" __global__ name
  int threads = 0;
  int dynamic_smem_bytes = 0;  // > 48 KB needs the opt-in attribute
  int tile_m = 0, tile_n = 0;
  // M tiles each block computes in turn (dense_wgmma's M_TILES): with more than one, a block's
  // producer loads the next tile while its consumers store the last, and a grid that would take
  // 1.8 waves takes one. 1 for every other template.
  int m_tiles_per_block = 1;
  int split_k = 1;
  std::string reduce_entry;  // "" when the main kernel writes C itself
  int reduce_threads = 256;
  int min_alignment_bytes = 4;  // pointers a, b, c must be aligned to this (vector loads)
  // > 0: the kernel has a TMA producer and takes, after DietcodeArgs, one CUtensorMap for A
  // (boxes of tile_m x tma_box_k elements) and one for B (tile_n x tma_box_k), encoded per
  // launch by src/pack/runtime/pack_tensor_maps.h. 0: DietcodeArgs is its only parameter.
  int tma_box_k = 0;
  // CPU kernels tuned for constant weights (tune --constant-weights): the measurer packs the
  // weights once with prepack_entry (into panels of panel_nr x panel_kc) and times
  // prepacked_entry; "" for every other kernel (templates/x86/ops_x86.h: prepack,
  // run_prepacked; ConstantWeightsEntries below).
  std::string prepack_entry, prepacked_entry;
  int panel_nr = 0, panel_kc = 0;

  // What the host decides about a launch that the binary does not: two candidates with the same
  // binary and different host keys run differently (the tuner's duplicate check compares both).
  std::string host_key() const;
  // Bytes of workspace for a shape (0 when none).
  int64_t workspace_bytes(const GemmShape& shape) const;
  void grid(const GemmShape& shape, unsigned dims[3]) const;
  void reduce_grid(const GemmShape& shape, unsigned dims[3]) const;
};

// What a pack adds to a CPU kernel that packs B (the BLIS form of dense and conv2d) so that it
// can read weights its caller declares constant from panels packed once
// (templates/x86/ops_x86.h: prepack, run_prepacked). The tuner compiles them only with
// tune --constant-weights (CompileStepOptions::constant_weights).
struct ConstantWeightsEntries {
  std::string source;         // two extern "C" functions, to append to the kernel's source
  std::string prepack;        // long long (const DietcodeArgs*, float* dst)
  std::string run_prepacked;  // int (const DietcodeArgs*, const DietcodeCpuRuntime*, const float*)
  int panel_nr = 0, panel_kc = 0;  // the panels' layout: kernels with equal ones share them
  // The template text with these two entries and without the per-call one: what
  // `tune --constant-weights` compiles, since it times the kernel on prepacked weights only
  // (the per-call entry would double the compile for nothing).
  std::string standalone_source;
};

struct GeneratedKernel {
  std::string name;                  // "dense_f32"
  std::string source;                // full translation unit, includes resolved
  std::vector<std::string> options;  // NVRTC options: -D for tunables, static dims, epilogue
  LaunchPlan plan;
  // "" when the kernel runs on any GPU of the target's compute capability (and newer ones via
  // PTX); "a" when it uses architecture-specific instructions (wgmma: sm_90a), so it must be
  // compiled for exactly that arch and has no PTX fallback. See compile_arch().
  std::string arch_suffix;
  // Non-empty when the kernel is built for this one arch whatever the device: an x86 template's
  // ISA level ("x86-64-v3" for AVX2, "x86-64-v4" for AVX-512), which a newer CPU runs as is.
  std::string fixed_arch;
  // CPU kernels that pack B of dense or conv2d: the constant-weights entries; empty otherwise.
  ConstantWeightsEntries constant_weights;
};

// The arch_suffix every kernel of a template gets: "a" for templates that use
// architecture-specific instructions (dense_wgmma), "" for the rest.
std::string template_arch_suffix(const std::string& tmpl);

// The NVRTC -arch for this kernel on a GPU: "sm_" + compute capability + arch_suffix.
std::string compile_arch(const GeneratedKernel& kernel, const GpuSpec& gpu);
// The same, from the device's plain arch name ("sm_90" -> "sm_90a" for a wgmma kernel): the arch
// a kernel is compiled for when tuning on that device, and whose binary and ptxas report count.
// A kernel with a fixed_arch gets that (an AVX2 kernel is x86-64-v3's on a x86-64-v4 host).
std::string compile_arch(const GeneratedKernel& kernel, const std::string& device_arch);

// Generates the kernel for an op and a micro-kernel of a template that supports it.
// Static dimensions of the op become compile-time constants; dynamic ones stay runtime.
// Tunables missing from mk take the template's defaults. Throws UserError for an unknown
// template or tunable, or an op the template cannot compute; EnvironmentError when the
// template file cannot be read.
GeneratedKernel generate_kernel(const OpSpec& op, const MicroKernel& mk);

// The CPU target's part of generate_kernel (generate_cpu_kernel.cc): a C++ translation unit
// instantiating templates/x86/ops_x86.h for every tunable of `mk` (all given), with one
// extern "C" entry, plan.entry, of the DietcodeCpuKernelFn signature (templates/x86/
// dietcode_cpu.h). plan.tile_m/tile_n are the register tile; nothing else of the plan applies.
GeneratedKernel generate_cpu_kernel(const OpSpec& op, const MicroKernel& mk);

// The simple reference kernel (templates/reference_gemm.cu, one thread per output, double
// accumulation, the op's operand layout and epilogue) that GPU checks compare micro-kernels
// against: every float32 op (dense, batch_matmul in any transpose, conv2d NHWC through the
// arguments' conv geometry). Throws UserError for other dtypes.
GeneratedKernel generate_reference_kernel(const OpSpec& op);

}  // namespace dietcode
