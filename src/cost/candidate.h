// One micro-kernel as the cost model sees it, with everything its shape-independent
// properties are computed from: the tunables, the launch plan code generation made for it,
// what ptxas reported once it is compiled (absent before), the element type and the machine
// (a GPU, or for the x86 templates a CPU).
//
// Tunable names are read by convention (tile M is "BM", per-thread tile "TM"/"TN", pipeline
// depth "STAGES", vector width "VEC", K tile "BK"); the launch plan is authoritative for the
// block tile, thread count, shared memory and split-K, so a template that names its tunables
// differently still gets correct occupancy and padding terms.
#pragma once

#include <optional>

#include "codegen/generated_kernel.h"
#include "nvrtc/compiler.h"
#include "space/cpu_spec.h"
#include "space/gpu_spec.h"
#include "space/target.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

struct KernelCandidate {
  MicroKernel mk;
  LaunchPlan plan;
  std::optional<KernelResources> compiled;  // the main entry's ptxas report, once compiled
  DType dtype = DType::kFloat32;
  // The op's fused epilogue: its work per output element is part of the kernel's throughput,
  // which is what lets one model learn from several ops (bias-only fc2, GELU fc1) at once.
  Epilogue epilogue = Epilogue::kNone;
  // The machine the kernel runs on: the template's target says which of the two specs counts
  // (features.h and analytic.h pick their target's terms by it).
  Target target = Target::kCuda;
  GpuSpec gpu;
  CpuSpec cpu;
  // B is the op's weights and arrives packed (cpu.weights_prepacked, a dense or conv2d op): the
  // CPU's BLIS form packs no B in the call.
  bool weights_prepacked = false;
};

// Bytes of one input/output element.
int element_bytes(DType dtype);

// Peak dense throughput for the dtype (SIMT FMA for float32, tensor cores otherwise), in
// FLOP per microsecond, the unit every throughput in src/cost uses.
double peak_flops_per_us(const GpuSpec& gpu, DType dtype);

// The K extent of one block-tile step: the "BK" tunable, 1 when the template has none (then
// no K padding is modelled).
int k_tile(const KernelCandidate& c);

// Elements of the output tile one thread owns along M and N. Taken from "TM"/"TN" when the
// template has them; otherwise the per-thread share of the block tile is assumed square.
struct ThreadTile {
  double m = 1, n = 1;
  bool from_tunables = false;
};
ThreadTile thread_tile(const KernelCandidate& c);

// Registers per thread: the compiled count when known, else an estimate from the per-thread
// accumulators and operand fragments plus a fixed allowance for addresses and loop state,
// capped at the GPU's per-thread limit. The estimate only steers occupancy before compiling.
int registers_per_thread(const KernelCandidate& c);
bool registers_are_estimated(const KernelCandidate& c);

// Shared memory one block holds: static (from ptxas, when known) plus the plan's dynamic.
int shared_memory_bytes(const KernelCandidate& c);

}  // namespace dietcode
