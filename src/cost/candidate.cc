#include "cost/candidate.h"

#include <algorithm>
#include <cmath>

namespace dietcode {

namespace {

// Registers a kernel needs beyond its accumulators and fragments: tile pointers, loop
// counters, predicates for the M tail and shared-memory addresses. ptxas reports of SIMT
// GEMM kernels sit 20-40 registers above accumulators + fragments.
constexpr int kBookkeepingRegisters = 32;

}  // namespace

int element_bytes(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

double peak_flops_per_us(const GpuSpec& gpu, DType dtype) {
  double tflops = gpu.fp32_tflops;
  if (dtype == DType::kFloat16) tflops = gpu.fp16_tensor_tflops;
  if (dtype == DType::kBFloat16) tflops = gpu.bf16_tensor_tflops;
  return tflops * 1e6;  // 1 TFLOP/s = 1e12 FLOP/s = 1e6 FLOP/us
}

int k_tile(const KernelCandidate& c) { return std::max(1, c.mk.get_or("BK", 1)); }

ThreadTile thread_tile(const KernelCandidate& c) {
  int tm = c.mk.get_or("TM", 0), tn = c.mk.get_or("TN", 0);
  if (tm > 0 && tn > 0) return {double(tm), double(tn), true};
  double outputs = double(c.plan.tile_m) * c.plan.tile_n / std::max(1, c.plan.threads);
  double side = std::sqrt(std::max(1.0, outputs));
  return {side, side, false};
}

bool registers_are_estimated(const KernelCandidate& c) {
  return !c.compiled || c.compiled->registers <= 0;
}

int registers_per_thread(const KernelCandidate& c) {
  if (!registers_are_estimated(c)) return c.compiled->registers;
  // Tensor-core templates, by their tunables' conventional names. Warpgroup MMA with WG_M
  // consumer warpgroups: only consumers hold accumulators, BN / 2 each (a per-thread average
  // over the block would count the producer warpgroup too); operands stay in shared memory.
  const int warpgroups = c.mk.get_or("WG_M", 0), bn = c.mk.get_or("BN", 0);
  if (warpgroups > 0 && bn > 0)
    return std::min(bn / 2 + kBookkeepingRegisters, c.gpu.max_regs_per_thread);
  // mma.sync warp tiles WM x WN: WM * WN / 32 accumulators per lane, and A and B fragments of
  // two k16 steps in flight (WM / 16 * 4 + WN / 8 * 2 registers per step).
  const int wm = c.mk.get_or("WM", 0), wn = c.mk.get_or("WN", 0);
  if (c.dtype != DType::kFloat32 && wm > 0 && wn > 0)
    return std::min(wm * wn / 32 + wm / 2 + wn / 2 + kBookkeepingRegisters,
                    c.gpu.max_regs_per_thread);
  // Accumulators are 32-bit for every dtype (fp32 accumulate); operand fragments pack
  // 4 / element_bytes elements per register and are double-buffered across K steps.
  double accumulators = double(c.plan.tile_m) * c.plan.tile_n / std::max(1, c.plan.threads);
  ThreadTile t = thread_tile(c);
  double fragments = 2.0 * (t.m + t.n) * element_bytes(c.dtype) / 4.0;
  int estimate = int(std::ceil(accumulators + fragments)) + kBookkeepingRegisters;
  return std::min(estimate, c.gpu.max_regs_per_thread);
}

int shared_memory_bytes(const KernelCandidate& c) {
  int static_smem = c.compiled ? c.compiled->static_smem : 0;
  return static_smem + c.plan.dynamic_smem_bytes;
}

}  // namespace dietcode
