// The GPUs `dietcode tune` measures on: one (--device N, the default 0) or several of one model
// (--devices 0,1,3 | all), real ones through measurement workers or a simulated host (a TEST
// DOUBLE, with --simulate). Several share the measuring through a MeasurePool
// (measure/measure_pool.h), which leaves the log as one GPU would write it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "measure/measure_pool.h"
#include "measure/measurer.h"
#include "nvrtc/compiler.h"
#include "space/gpu_spec.h"

namespace dietcode::cli {

struct DeviceRequest {
  std::string simulate;  // a GPU config to simulate; empty: the real GPUs of this host
  std::string devices;   // --devices as given; empty: `device` alone
  int device = 0;        // --device
  double noise = 0;      // the simulated devices' noise
  uint64_t seed = 0;
  bool flush_l2 = true;  // --l2 flush|warm
};

struct TuneDevices {
  std::vector<std::unique_ptr<Measurer>> measurers;  // one per ordinal
  std::vector<int> ordinals;
  GpuSpec gpu;                        // the model's limits, which the search enumerates within
  std::unique_ptr<MeasurePool> pool;  // with more than one device; declared after `measurers`
                                      // so it is destroyed first
};

// Opens the devices. Throws UserError ("dietcode tune: --devices: ...") for a bad list or mixed
// models, EnvironmentError ("dietcode tune: no CUDA GPU: ...") when there is no GPU to use.
// `compiler` builds reference kernels for real GPUs and must outlive the result.
TuneDevices open_tune_devices(const DeviceRequest& request, Compiler& compiler);

// "0,1,3".
std::string ordinals_text(const std::vector<int>& ordinals);

// After a run on several GPUs, one line per GPU: how many jobs it measured, and whether it was
// dropped and why.
void print_device_shares(const MeasurePool& pool, std::FILE* out);

}  // namespace dietcode::cli
