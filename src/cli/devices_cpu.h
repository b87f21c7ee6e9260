// The host CPU in `dietcode devices`: what `tune --target cpu` would run on, with its fp32 FMA
// peak measured by a short probe (x86/host_cpu.h; ~0.3 s), since the datasheet figure is wrong
// on every VM and every turbo setting.
#pragma once

#include <nlohmann/json.hpp>

namespace dietcode::cli {

// {"model_name", "vendor", "isa_level", "avx2", "fma", "avx512f", "logical_cores",
//  "physical_cores", "cache": {...}, "fp32_peak_gflops": {"one_thread", "all_threads",
//  "one_thread_256bit"}, "targets_cpu": bool} (one_thread_256bit only on AVX-512 CPUs).
nlohmann::json host_cpu_json();

// The same as text, a block like a GPU's.
void print_host_cpu(const nlohmann::json& cpu);

}  // namespace dietcode::cli
