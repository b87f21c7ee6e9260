// Peak throughput of a queried GPU. The driver reports limits (SMs, clocks, shared memory) but
// no FLOP rates, and the analytical cost terms need them. A shipped config of the same model
// is the best source (NVIDIA's published figures), scaled to this board's SMs and clock since
// one name covers several boards (H100 SXM and PCIe); anything else gets an estimate from the
// per-SM rates of its compute capability.
#pragma once

#include <string>
#include <vector>

#include "space/gpu_spec.h"

namespace dietcode {

// The shipped configs (configs/gpus) that parse. One broken by a local edit is skipped here, so
// it cannot hide the local GPU, and reported where it is used by id.
std::vector<GpuSpec> shipped_configs();

// The shipped config describing the same GPU model as `device` (same compute capability, and
// the same name or a name holding the config's id as a word: "NVIDIA H100 PCIe" -> h100,
// "NVIDIA GeForce RTX 4090" -> rtx4090), or null.
const GpuSpec* match_shipped_config(const GpuSpec& device, const std::vector<GpuSpec>& shipped);

// Sets device's fp32/fp16/bf16 TFLOP/s from the matching config or the estimate. Memory
// bandwidth: `measured_gbs` (from the memory clock and bus width) when positive, else the
// config's figure, else left as it is.
void fill_peak_figures(GpuSpec& device, const std::vector<GpuSpec>& shipped, double measured_gbs);

// The estimate alone: FP32 FMA lanes and dense tensor-core FLOP per clock per SM for the
// compute capability, times SMs and clock. GeForce boards run fp16 with fp32 accumulation at
// half rate, which `name` reveals.
void estimate_peak_figures(GpuSpec& device);

}  // namespace dietcode
