// Which GPUs of a host a run measures on (`tune --devices 0,1,3` or `--devices all`), the rule
// that they are all one model, and the GPUs of a simulated host.
//
// One run tunes for one GPU model: its log's records name one device and arch, and a pack is
// built for one. Boards of one model differ little (clocks, thermals), so spreading the
// measurements of one search over them is sound; spreading it over an H100 and an A100 is
// not, because the search would compare latencies of two different machines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "space/gpu_spec.h"

namespace dietcode {

// Parses a device list: "all" (every one of `count` GPUs), or distinct ordinals separated by
// commas. Throws UserError with one line, without a prefix (the caller names the option):
//   expected "all" or GPU ordinals separated by commas (such as 0,1,3), got "x"
//   GPU 0 is listed twice
//   no GPU 5: this host has 2 GPUs (0 to 1)
std::vector<int> parse_device_list(const std::string& text, int count);

// "NVIDIA H100 80GB HBM3, sm_90, 132 SMs": what makes two GPUs the same model here.
std::string gpu_model_text(const GpuSpec& gpu);

// Throws UserError naming the first two GPUs (ordinal, spec) of different models:
//   GPU 0 (NVIDIA H100 ..., sm_90, 132 SMs) and GPU 2 (NVIDIA A100 ..., sm_80, 108 SMs) are
//   different GPU models; a run tunes one model: start one run per model, each with its log
void check_same_model(const std::vector<std::pair<int, GpuSpec>>& gpus);

// A simulated host (a TEST DOUBLE, like the simulated device): kSimulatedHostGpus GPUs of the
// --simulate model, unless the environment variable kSimulatedGpusVariable describes them,
// one entry per GPU separated by ';', each a comma-separated list of settings:
//   gpu=ID          a shipped config other than --simulate's (to test mixed models)
//   delay_ms=MS     slept per measured kernel: an artificial speed (to test scheduling)
//   fail_after=N    the GPU "dies" after N measuring calls (to test losing a device)
// An empty entry is a plain GPU of the --simulate model. Example: "delay_ms=5;delay_ms=40;;".
inline constexpr int kSimulatedHostGpus = 8;
inline constexpr char kSimulatedGpusVariable[] = "DIETCODE_SIMULATED_GPUS";

struct SimulatedGpuSetup {
  std::string gpu;  // config id
  double delay_seconds = 0;
  int fail_after_calls = -1;
};

// `description`: the variable's value, or null when it is not set. Throws UserError
// "DIETCODE_SIMULATED_GPUS: GPU 1: ..." for a setting it cannot read.
std::vector<SimulatedGpuSetup> simulated_host(const std::string& gpu, const char* description);

}  // namespace dietcode
