#include "cli/devices_cpu.h"

#include <fmt/format.h>

#include <string>

#include "x86/host_cpu.h"

namespace dietcode::cli {

namespace {

// Every CPU template needs AVX2 and FMA (x86-64-v3).
constexpr int kMinCpuLevel = 3;

std::string kib_text(int64_t bytes) {
  if (bytes <= 0) return "unknown";
  if (bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} KiB", bytes >> 10);
}

}  // namespace

nlohmann::json host_cpu_json() {
  const HostCpu cpu = detect_host_cpu();
  nlohmann::json j = to_json(cpu);
  nlohmann::json peak = {{"one_thread", cpu.fp32_peak_gflops(1)},
                         {"all_threads", cpu.fp32_peak_gflops(0)}};
  if (cpu.avx512f) peak["one_thread_256bit"] = cpu.fp32_peak_gflops(1, 256);
  j["fp32_peak_gflops"] = peak;
  j["targets_cpu"] = cpu.isa_level_number >= kMinCpuLevel;
  return j;
}

void print_host_cpu(const nlohmann::json& cpu) {
  fmt::print("host CPU: {} ({})\n", cpu["model_name"].get<std::string>(),
             cpu["isa_level"].get<std::string>());
  const int physical = cpu["physical_cores"].get<int>();
  fmt::print("  cores               {} usable{}\n", cpu["logical_cores"].get<int>(),
             physical > 0 ? fmt::format(" ({} physical)", physical) : std::string());
  const auto& cache = cpu["cache"];
  fmt::print("  caches              L1d {}, L2 {} per core, L3 {} (from {})\n",
             kib_text(cache["l1d"].get<int64_t>()), kib_text(cache["l2"].get<int64_t>()),
             kib_text(cache["l3"].get<int64_t>()), cache["source"].get<std::string>());
  const auto& peak = cpu["fp32_peak_gflops"];
  std::string widths = cpu["avx512f"].get<bool>() ? "512-bit" : "256-bit";
  fmt::print("  fp32 FMA peak       {:.0f} GFLOP/s on all cores, {:.0f} on one ({} vectors{})\n",
             peak["all_threads"].get<double>(), peak["one_thread"].get<double>(), widths,
             peak.contains("one_thread_256bit")
                 ? fmt::format("; {:.0f} on one with 256-bit", peak["one_thread_256bit"].get<double>())
                 : std::string());
  if (cpu["targets_cpu"].get<bool>())
    fmt::print("  tune with           dietcode tune WORKLOAD.json --target cpu\n");
  else
    fmt::print("  (below x86-64-v3: the CPU templates need AVX2 and FMA)\n");
}

}  // namespace dietcode::cli
