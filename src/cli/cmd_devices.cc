// dietcode devices [--json]: the local GPUs with the limits the search enumerates within, and
// the host CPU (devices_cpu.h) that `tune --target cpu` runs on. Without a driver or a GPU it
// exits 2 with the reason on stderr (scripts test for a GPU so), and lists on stdout the host
// CPU and the shipped GPU configs one can target instead, because that is what the user needs
// next.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/devices_cpu.h"
#include "common/error.h"
#include "cuda/device_query.h"
#include "cuda/driver.h"
#include "cuda/peak_figures.h"
#include "space/gpu_spec.h"

namespace dietcode::cli {

namespace {

using nlohmann::json;

struct DevicesOptions {
  bool json = false;
};

// "48 KiB", "50 MiB", "79.2 GiB": exact in the unit where the figure is whole.
std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) bytes /= 1024, ++unit;
  return std::floor(bytes) == bytes ? fmt::format("{} {}", bytes, units[unit])
                                    : fmt::format("{:.1f} {}", bytes, units[unit]);
}

std::string cuda_version_text(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::string peak_source(const GpuSpec& device, const std::vector<GpuSpec>& shipped) {
  const GpuSpec* model = match_shipped_config(device, shipped);
  return model ? "configs/gpus/" + model->id + ".json, scaled to this board's SMs and clock"
               : "estimated from the compute capability";
}

void print_device(int ordinal, const GpuSpec& s, size_t memory, const std::string& peaks_from) {
  fmt::print("device {}: {} ({})\n", ordinal, s.name, s.arch());
  fmt::print("  compute capability  {}.{}\n", s.cc_major, s.cc_minor);
  fmt::print("  SMs                 {}\n", s.sms);
  fmt::print("  memory              {}\n", bytes_text(static_cast<double>(memory)));
  fmt::print("  shared memory       {} per block, {} with opt-in, {} per SM\n",
             bytes_text(s.smem_per_block), bytes_text(s.smem_per_block_optin),
             bytes_text(s.smem_per_sm));
  fmt::print("  registers           {} per SM, {} per block, {} per thread\n", s.regs_per_sm,
             s.regs_per_block, s.max_regs_per_thread);
  fmt::print("  threads             {} per block, {} per SM, {} blocks per SM, warp {}\n",
             s.max_threads_per_block, s.max_threads_per_sm, s.max_blocks_per_sm, s.warp_size);
  fmt::print("  L2 cache            {}\n", bytes_text(s.l2_bytes));
  fmt::print("  clock               {:.0f} MHz\n", s.clock_ghz * 1000);
  fmt::print(
      "  peak                FP32 {:.1f} TFLOP/s, FP16 tensor {:.1f}, BF16 tensor {:.1f}, "
      "DRAM {:.0f} GB/s\n",
      s.fp32_tflops, s.fp16_tensor_tflops, s.bf16_tensor_tflops, s.mem_bandwidth_gbs);
  fmt::print("                      ({})\n", peaks_from);
}

json config_list_json(const std::vector<GpuSpec>& configs) {
  json list = json::array();
  for (const GpuSpec& s : configs) {
    list.push_back({{"id", s.id}, {"name", s.name}, {"arch", s.arch()}, {"sms", s.sms}});
  }
  return list;
}

// The no-GPU answer: the reason on stderr (one line), the targets on stdout.
int report_no_device(const std::string& why, const DevicesOptions& opt,
                     const GlobalOptions& global) {
  fmt::print(stderr, "{}\n", why);
  const std::vector<GpuSpec> configs = shipped_configs();
  if (opt.json) {
    json out = {{"devices", json::array()},
                {"error", why},
                {"cpu", host_cpu_json()},
                {"gpu_configs", config_list_json(configs)}};
    fmt::print("{}\n", out.dump(2));
  } else if (!global.quiet) {
    print_host_cpu(host_cpu_json());
    fmt::print("No local GPU; these shipped GPU configs can be targeted instead (--gpu ID):\n");
    for (const GpuSpec& s : configs) {
      fmt::print("  --gpu {:<8} {} ({}, {} SMs)\n", s.id, s.name, s.arch(), s.sms);
    }
    fmt::print(
        "For example:\n  dietcode inspect WORKLOAD.json --space --gpu h100\n"
        "  dietcode tune WORKLOAD.json --simulate h100\n");
  }
  return 2;
}

int run_devices(const DevicesOptions& opt, const GlobalOptions& global) {
  std::string why;
  const Driver* d = driver_or_null(&why);
  if (!d) return report_no_device(why, opt, global);
  std::vector<GpuSpec> devices;
  try {
    devices = query_devices();
  } catch (const EnvironmentError& e) {
    return report_no_device(e.what(), opt, global);
  }

  const std::vector<GpuSpec> shipped = shipped_configs();
  if (opt.json) {
    json out = {{"driver_cuda_version", cuda_version_text(d->version)},
                {"devices", json::array()},
                {"cpu", host_cpu_json()}};
    for (size_t i = 0; i < devices.size(); ++i) {
      json j = gpu_spec_to_json(devices[i]);
      j["ordinal"] = static_cast<int>(i);
      j["arch"] = devices[i].arch();
      j["total_memory_bytes"] = device_total_memory(static_cast<int>(i));
      j["peak_figures_from"] = peak_source(devices[i], shipped);
      out["devices"].push_back(j);
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("CUDA driver {}, {} GPU{}\n", cuda_version_text(d->version), devices.size(),
             devices.size() == 1 ? "" : "s");
  for (size_t i = 0; i < devices.size(); ++i) {
    print_device(static_cast<int>(i), devices[i], device_total_memory(static_cast<int>(i)),
                 peak_source(devices[i], shipped));
  }
  print_host_cpu(host_cpu_json());
  return 0;
}

}  // namespace

void register_devices(CLI::App& app, GlobalOptions& global, Action& action) {
  auto opt = std::make_shared<DevicesOptions>();
  auto* cmd = app.add_subcommand(
      "devices", "List the local GPUs with the limits the search uses, and the host CPU");
  cmd->add_flag("--json", opt->json, "Print the devices as JSON");
  add_global_flags(*cmd, global);
  cmd->footer(
      "Exits 2 when there is no CUDA driver or no GPU, and then lists the host CPU (tune\n"
      "--target cpu) and the shipped GPU configs that tune --simulate and inspect --space --gpu\n"
      "can target instead. The CPU's fp32 peak is measured by a short probe (~0.3 s).\n"
      "Example:\n"
      "  dietcode devices\n"
      "  dietcode devices --json\n");
  cmd->callback(
      [opt, &global, &action] { action = [opt, &global] { return run_devices(*opt, global); }; });
}

}  // namespace dietcode::cli
