// The limits and peak figures of one GPU: what bounds the micro-kernel space and what the
// analytical cost terms and the simulated device are computed from. Read from
// configs/gpus/<id>.json, or queried from a present device (whose own limits win).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dietcode {

struct GpuSpec {
  std::string id;    // config file stem, "h100"; "device0" for a queried GPU
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 9, cc_minor = 0;
  int sms = 132;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int regs_per_sm = 65536;
  int regs_per_block = 65536;
  int max_regs_per_thread = 255;
  int smem_per_block = 48 * 1024;         // without opt-in
  int smem_per_block_optin = 227 * 1024;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int smem_per_sm = 228 * 1024;
  int l2_bytes = 50 * 1024 * 1024;
  double clock_ghz = 1.98;
  double fp32_tflops = 67.0;          // SIMT FMA peak
  double fp16_tensor_tflops = 989.0;  // dense, fp32 accumulate
  double bf16_tensor_tflops = 989.0;
  double mem_bandwidth_gbs = 3350.0;
  bool queried = false;  // true when read from a present device rather than a config

  std::string arch() const;  // "sm_90"
};

// Loads configs/gpus/<id>.json (id as listed by list_gpu_specs) or a path to such a file.
// Throws UserError naming the file and JSON path on a bad config, or listing the known ids.
GpuSpec load_gpu_spec(const std::string& id_or_path);
std::vector<std::string> list_gpu_specs();  // ids of the shipped configs, sorted

// The config-file form: every field but id and queried, under its own name.
nlohmann::json gpu_spec_to_json(const GpuSpec& spec);
// Parses that form strictly (unknown keys, missing keys, wrong types and inconsistent limits
// are UserErrors "FILE: KEY: what is wrong"); `file` names the source in messages.
GpuSpec parse_gpu_spec(const nlohmann::json& j, const std::string& file, const std::string& id);

}  // namespace dietcode
