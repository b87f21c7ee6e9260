#include "cli/tune_devices.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "measure/device_list.h"
#include "measure/gpu_measurer.h"
#include "measure/simulated_device.h"

namespace dietcode::cli {

namespace {

[[noreturn]] void bad_option(const std::string& what) { throw UserError("dietcode tune: " + what); }

std::vector<int> device_list(const DeviceRequest& o, int count) {
  try {
    return parse_device_list(o.devices, count);
  } catch (const UserError& e) {
    bad_option(std::string("--devices: ") + e.what());
  }
}

void open_simulated(const DeviceRequest& o, TuneDevices& d) {
  std::vector<SimulatedGpuSetup> host;
  try {
    host = simulated_host(o.simulate, std::getenv(kSimulatedGpusVariable));
  } catch (const UserError& e) {
    bad_option(e.what());
  }
  d.ordinals = o.devices.empty() ? std::vector<int>{o.device} : device_list(o, int(host.size()));
  if (o.devices.empty() && o.device >= int(host.size()))
    bad_option(fmt::format("--device: no GPU {} on the simulated host (it has {})", o.device,
                           host.size()));
  std::vector<std::pair<int, GpuSpec>> specs;
  for (int ordinal : d.ordinals) {
    const SimulatedGpuSetup& setup = host[size_t(ordinal)];
    GpuSpec gpu;
    try {
      gpu = load_gpu_spec(setup.gpu);
    } catch (const UserError& e) {
      bad_option(std::string("--simulate: ") + e.what());
    }
    specs.push_back({ordinal, gpu});
    SimulatedDeviceOptions sim;
    sim.noise_sigma = o.noise;
    sim.seed = o.seed;
    sim.ordinal = ordinal;
    sim.delay_seconds = setup.delay_seconds;
    sim.fail_after_calls = setup.fail_after_calls;
    sim.l2 = o.flush_l2 ? "flush" : "warm";
    d.measurers.push_back(std::make_unique<SimulatedDevice>(gpu, sim));
  }
  try {
    check_same_model(specs);
  } catch (const UserError& e) {
    bad_option(std::string("--devices: ") + e.what());
  }
  d.gpu = specs[0].second;
}

void open_gpus(const DeviceRequest& o, Compiler& compiler, TuneDevices& d) {
  // The worker process talks to the driver; this process never initialises CUDA. The worker
  // is this binary run again as `dietcode __measure-worker` (gpu_measurer.h says why not a
  // fork: tune compiles on several threads). References share the tuner's kernel cache.
  auto first = std::make_unique<WorkerProcess>(gpu_worker_command());
  if (!o.devices.empty()) {
    const int count = gpu_count(*first);
    if (count == 0) throw EnvironmentError("the driver sees no GPU");
    d.ordinals = device_list(o, count);
  } else {
    d.ordinals = {o.device};
  }
  std::vector<std::pair<int, GpuSpec>> specs;
  for (int ordinal : d.ordinals) {
    GpuMeasurerOptions options;
    options.device = ordinal;
    options.measure.seed = o.seed;
    options.measure.flush_l2 = o.flush_l2;
    options.compiler = &compiler;
    auto worker = first ? std::move(first) : std::make_unique<WorkerProcess>(gpu_worker_command());
    auto gpu = std::make_unique<GpuMeasurer>(std::move(worker), options);
    specs.push_back({ordinal, gpu->gpu()});
    d.measurers.push_back(std::move(gpu));
  }
  try {
    check_same_model(specs);
  } catch (const UserError& e) {
    bad_option(std::string("--devices: ") + e.what());
  }
  d.gpu = specs[0].second;
}

}  // namespace

TuneDevices open_tune_devices(const DeviceRequest& o, Compiler& compiler) {
  TuneDevices d;
  if (!o.simulate.empty()) {
    open_simulated(o, d);
  } else {
    try {
      open_gpus(o, compiler, d);
    } catch (const EnvironmentError& e) {
      throw EnvironmentError(std::string("dietcode tune: no CUDA GPU: ") + e.what() +
                             " (use --simulate GPU to run against a model of one)");
    }
  }
  if (d.measurers.size() > 1) {
    std::vector<PoolDevice> members;
    for (size_t i = 0; i < d.measurers.size(); ++i)
      members.push_back({d.ordinals[i], d.measurers[i].get()});
    d.pool = std::make_unique<MeasurePool>(std::move(members));
  }
  return d;
}

std::string ordinals_text(const std::vector<int>& ordinals) {
  std::string out;
  for (int o : ordinals) out += (out.empty() ? "" : ",") + std::to_string(o);
  return out;
}

void print_device_shares(const MeasurePool& pool, FILE* out) {
  for (const PoolDeviceStats& s : pool.stats()) {
    std::fprintf(out, "GPU %d: %d job%s (%zu kernel%s), %.1f s measuring%s\n", s.ordinal, s.jobs,
                 s.jobs == 1 ? "" : "s", s.inputs, s.inputs == 1 ? "" : "s", s.busy_seconds,
                 s.failed ? (", then dropped: " + s.error).c_str() : "");
  }
}

}  // namespace dietcode::cli
