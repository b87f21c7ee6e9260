#include "measure/simulated_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "common/error.h"
#include "measure/conv2d_shape.h"

namespace dietcode {

namespace {

// Properties of current NVIDIA GPUs that GpuSpec does not carry. Each is a round figure, chosen
// so that the best fp32 SIMT kernels reach 60-70% of the FMA peak at large sizes, as they do.
constexpr double kSimtBaseEfficiency = 0.75;    // address arithmetic, loop and epilogue overhead
constexpr double kTensorBaseEfficiency = 0.70;  // plus fragment shuffles
constexpr double kSmemBytesPerClock = 128;      // per SM: 32 banks x 4 bytes
constexpr double kSimtSyncOverheadK = 2;        // cost of one k-tile's barrier and pointer bumps,
constexpr double kTensorSyncOverheadK = 8;      //   in k steps of useful work
constexpr int kRegisterKnee = 168;              // beyond it ptxas starts trading ILP for registers
constexpr double kKneePenalty = 0.5;            // efficiency lost between the knee and 255
constexpr double kSpillPenalty = 0.5;           // local-memory traffic from register spills
constexpr double kSingleStagePenalty = 0.8;     // no prefetch: loads do not overlap the FMAs
constexpr double kWarpsToHideLatency = 8;       // resident warps per SM that hide pipeline latency
constexpr double kOneWarpEfficiency = 0.3;      // ... and what a lone warp still achieves
constexpr double kMemoryLatencyUs = 0.4;        // one global-to-shared tile load under load
constexpr double kWaveFixedUs = 0.3;            // a wave's prologue (first tile) and epilogue
constexpr double kDramEfficiency = 0.9;         // achieved / peak DRAM bandwidth
constexpr double kL2BandwidthFactor = 2.5;      // L2-to-SM bandwidth relative to DRAM
constexpr int kSmemReservedPerBlock = 1024;     // the driver reserves this per resident block
constexpr int kRegisterUnitPerWarp = 256;       // registers are allocated per warp in these units
constexpr double kReduceLaunchFraction = 0.5;   // a second launch in the same stream hides part
                                                // of its overhead behind the first kernel

// Tensor-core instruction classes. sm_90 specs carry wgmma's peak; warp-level mma.sync issues at
// about 2/3 of it there. Warpgroup MMA reads both operands from shared memory (no fragment
// loads) and hands stages over with mbarriers instead of block-wide barriers.
constexpr double kWarpgroupBaseEfficiency = 0.80;
constexpr double kMmaSyncOnHopper = 0.65;
constexpr double kWarpgroupSyncOverheadK = 4;
// With a TMA producer one thread issues two tensor copies per stage, where the cp.async
// producer's 128 threads issue (BM + BN) * 8 copies and arrive one by one: the stage handover
// costs about half as much.
constexpr double kTmaSyncOverheadK = 2;

bool is_tensor_core(DType dtype) { return dtype != DType::kFloat32; }
// Warp-specialized warpgroup-MMA templates (dense_wgmma), by the conventional tunable WG_M:
// consumer warpgroups issue m64 x BN MMAs straight from shared memory.
bool is_warpgroup_mma(const MicroKernel& mk) { return mk.get_or("WG_M", 0) > 0; }

// A conv2d shape's geometry, found through the instance that has this GEMM shape: the GEMM
// view overstates the input R*S/stride^2-fold (the taps of neighbouring pixels overlap).
std::optional<Conv2dShape> conv_geometry(const MeasureInput& input, const GemmShape& shape) {
  if (input.op->kind != OpKind::kConv2d) return std::nullopt;
  for (const Instance& inst : input.instances) {
    const GemmShape& g = inst.gemm;
    if (g.batch == shape.batch && g.M == shape.M && g.N == shape.N && g.K == shape.K)
      return conv2d_shape(*input.op, inst.values);
  }
  return std::nullopt;
}

int element_bytes(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int round_up(int value, int unit) { return int(ceil_div(value, unit) * unit); }

// ptxas's report for the plan's entry: the device's arch if compiled for it, else any arch
// (register counts differ little between sm_80 and sm_90).
const KernelResources* reported_resources(const MeasureInput& input, const std::string& arch) {
  const ArchBinary* chosen = nullptr;
  for (const auto& binary : input.compiled.binaries) {
    if (binary.resources.empty()) continue;
    if (!chosen || binary.arch == arch) chosen = &binary;
  }
  if (!chosen) return nullptr;
  for (const auto& res : chosen->resources)
    if (res.entry == input.kernel.plan.entry) return &res;
  return &chosen->resources.front();
}

// Per-thread accumulators plus operand fragments, the global-load staging registers and a
// fixed share for addresses and loop counters.
int estimate_registers(const LaunchPlan& plan, const MicroKernel& mk, DType dtype) {
  // Only a warpgroup kernel's consumers hold accumulators: BN / 2 fp32 per thread.
  if (is_warpgroup_mma(mk)) return round_up(mk.get_or("BN", 128) / 2 + 32, 8);
  double acc = double(plan.tile_m) * plan.tile_n / plan.threads;
  double staged = double(plan.tile_m + plan.tile_n) * mk.get_or("BK", 16) / plan.threads *
                  element_bytes(dtype) / 4.0;
  double fragments = is_tensor_core(dtype) ? acc / 4 : 2 * std::sqrt(acc);
  return round_up(int(std::ceil(acc + fragments + staged + 20)), 8);
}

// Loads from shared memory per FMA decide whether shared memory keeps the FMA units fed. A
// tm x tn register tile (per thread on SIMT, per warp on tensor cores) does tm*tn FMAs per
// tm+tn loads; the GPU needs `need` FMAs per loaded element to run at peak.
double smem_efficiency(const LaunchPlan& plan, const MicroKernel& mk, DType dtype,
                       const GpuSpec& gpu, double peak_tflops) {
  double fma_per_clock = peak_tflops * 1e12 / 2 / gpu.sms / (gpu.clock_ghz * 1e9);
  double elements_per_clock = kSmemBytesPerClock / element_bytes(dtype);
  double need = fma_per_clock / elements_per_clock;
  double tm, tn;
  if (is_warpgroup_mma(mk)) {
    tm = 64;  // one m64 x BN instruction per consumer warpgroup reads both operands
    tn = mk.get_or("BN", plan.tile_n);
  } else if (is_tensor_core(dtype)) {
    double warps = std::max(1, plan.threads / gpu.warp_size);
    tm = tn = std::sqrt(double(plan.tile_m) * plan.tile_n / warps);
  } else if (mk.get_or("TM", 0) > 0 && mk.get_or("TN", 0) > 0) {
    tm = mk.get("TM");
    tn = mk.get("TN");
  } else {
    tm = tn = std::sqrt(double(plan.tile_m) * plan.tile_n / plan.threads);
  }
  return std::min(1.0, tm * tn / (tm + tn) / need);
}

// Checks the launch plan and resources against the GPU; fills registers, resident blocks and
// the status. Returns false when the candidate cannot run.
bool check_resources(const MeasureInput& input, const GpuSpec& gpu, SimulatedTiming& t) {
  const LaunchPlan& plan = input.kernel.plan;
  auto fail = [&t](MeasureStatus status, std::string error) {
    t.status = status;
    t.error = std::move(error);
    return false;
  };
  if (plan.threads <= 0 || plan.tile_m <= 0 || plan.tile_n <= 0 || plan.split_k < 1)
    return fail(MeasureStatus::kLaunchError,
                fmt::format("launch plan of {} cannot be launched: threads {}, tile {}x{}, "
                            "split_k {}",
                            plan.entry, plan.threads, plan.tile_m, plan.tile_n, plan.split_k));
  if (plan.threads > gpu.max_threads_per_block)
    return fail(MeasureStatus::kDeviceLimitsExceeded,
                fmt::format("{} threads per block exceed the GPU's {}", plan.threads,
                            gpu.max_threads_per_block));

  const KernelResources* reported = reported_resources(input, gpu.arch());
  int static_smem = reported ? reported->static_smem : 0;
  t.registers_estimated = reported == nullptr;
  t.registers =
      reported ? reported->registers : estimate_registers(plan, input.mk, input.op->dtype);
  int smem = plan.dynamic_smem_bytes + static_smem;
  if (smem > gpu.smem_per_block_optin)
    return fail(MeasureStatus::kDeviceLimitsExceeded,
                fmt::format("{} bytes of shared memory per block exceed the GPU's {}", smem,
                            gpu.smem_per_block_optin));
  if (t.registers > gpu.max_regs_per_thread)
    return fail(MeasureStatus::kDeviceLimitsExceeded,
                fmt::format("{} registers per thread exceed the GPU's {}", t.registers,
                            gpu.max_regs_per_thread));
  int warps = int(ceil_div(plan.threads, gpu.warp_size));
  int regs_per_warp = round_up(t.registers * gpu.warp_size, kRegisterUnitPerWarp);
  if (int64_t(regs_per_warp) * warps > gpu.regs_per_block)
    return fail(MeasureStatus::kDeviceLimitsExceeded,
                fmt::format("{} registers per block ({} per thread x {} threads) exceed the "
                            "GPU's {}",
                            regs_per_warp * warps, t.registers, plan.threads, gpu.regs_per_block));

  int by_threads = gpu.max_threads_per_sm / (warps * gpu.warp_size);
  int by_registers = gpu.regs_per_sm / (regs_per_warp * warps);
  int by_smem = gpu.smem_per_sm / (smem + kSmemReservedPerBlock);
  t.resident_blocks_per_sm = std::min({gpu.max_blocks_per_sm, by_threads, by_registers, by_smem});
  if (t.resident_blocks_per_sm < 1)
    return fail(MeasureStatus::kDeviceLimitsExceeded,
                fmt::format("no block fits on an SM ({} threads, {} registers per thread, {} "
                            "bytes of shared memory)",
                            plan.threads, t.registers, smem));
  return true;
}

double tile_efficiency(const MeasureInput& input, const GpuSpec& gpu, double peak_tflops,
                       int registers) {
  const LaunchPlan& plan = input.kernel.plan;
  DType dtype = input.op->dtype;
  bool tensor = is_tensor_core(dtype);
  double bk = input.mk.get_or("BK", 16);
  const bool warpgroup = tensor && is_warpgroup_mma(input.mk);
  double eff = warpgroup ? kWarpgroupBaseEfficiency
               : tensor  ? kTensorBaseEfficiency
                         : kSimtBaseEfficiency;
  // The tensor peak of an sm_90 spec is wgmma's; warp-level mma.sync issues slower there.
  if (tensor && !warpgroup && gpu.cc_major == 9) eff *= kMmaSyncOnHopper;
  eff *= smem_efficiency(plan, input.mk, dtype, gpu, peak_tflops);
  const bool tma = warpgroup && input.mk.get_or("PRODUCER", 0) == 1;
  const double sync_k = tma         ? kTmaSyncOverheadK
                        : warpgroup ? kWarpgroupSyncOverheadK
                        : tensor  ? kTensorSyncOverheadK
                                  : kSimtSyncOverheadK;
  eff *= bk / (bk + sync_k);
  if (input.mk.get_or("STAGES", 2) < 2) eff *= kSingleStagePenalty;
  if (registers > kRegisterKnee)
    eff *= 1 - kKneePenalty * double(registers - kRegisterKnee) / (255 - kRegisterKnee);
  const KernelResources* reported = reported_resources(input, gpu.arch());
  if (reported && (reported->spill_stores > 0 || reported->spill_loads > 0)) eff *= kSpillPenalty;
  return eff;
}

// Few resident warps leave the pipelines idle while loads are in flight.
double latency_hiding(double resident_warps) {
  return std::min(
      1.0, kOneWarpEfficiency + (1 - kOneWarpEfficiency) * resident_warps / kWarpsToHideLatency);
}

// SplitMix64: a good 64-bit mix for turning a hash into independent uniforms.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

}  // namespace

SimulatedDevice::SimulatedDevice(GpuSpec gpu, SimulatedDeviceOptions options)
    : gpu_(std::move(gpu)), options_(options) {}

DeviceIdentity SimulatedDevice::device() const {
  return {"simulated " + gpu_.name, gpu_.arch(), true, options_.l2};
}

SimulatedTiming SimulatedDevice::model(const MeasureInput& input, const GemmShape& shape) const {
  SimulatedTiming t;
  if (!check_resources(input, gpu_, t)) return t;
  const LaunchPlan& plan = input.kernel.plan;
  DType dtype = input.op->dtype;
  double peak_tflops = dtype == DType::kFloat32   ? gpu_.fp32_tflops
                       : dtype == DType::kFloat16 ? gpu_.fp16_tensor_tflops
                                                  : gpu_.bf16_tensor_tflops;
  t.tile_efficiency = tile_efficiency(input, gpu_, peak_tflops, t.registers);

  // Waves on the busiest SM. Every block computes a full tile over a BK-padded K slice.
  int bk = std::max(1, input.mk.get_or("BK", 16));
  int stages = std::max(1, input.mk.get_or("STAGES", 2));
  int64_t k_slice = ceil_div(shape.K, plan.split_k);
  int64_t k_tiles = ceil_div(k_slice, bk);
  // A block walks m_tiles_per_block M tiles in turn, its loads running on from one to the next.
  const int64_t m_tiles = ceil_div(shape.M, plan.tile_m);
  const int walk = std::max(1, plan.m_tiles_per_block);
  const int64_t tiles = m_tiles * ceil_div(shape.N, plan.tile_n) * shape.batch * plan.split_k;
  t.blocks = ceil_div(m_tiles, walk) * ceil_div(shape.N, plan.tile_n) * shape.batch * plan.split_k;
  t.blocks_on_busiest_sm = ceil_div(t.blocks, gpu_.sms);
  const int64_t tiles_per_block = ceil_div(m_tiles, ceil_div(m_tiles, walk));  // the longest walk
  const int64_t block_k_tiles = k_tiles * tiles_per_block;  // the k-tiles a block's loop runs
  double block_flops = 2.0 * plan.tile_m * plan.tile_n * double(block_k_tiles * bk);
  double sm_flops_per_us = peak_tflops * 1e6 / gpu_.sms;
  double block_us = block_flops / (sm_flops_per_us * t.tile_efficiency);
  // With stages - 1 tiles in flight, a block's k-loop cannot go faster than its loads arrive.
  double latency_floor_us = double(block_k_tiles) * kMemoryLatencyUs / std::max(1, stages - 1);
  int warps_per_block = int(ceil_div(plan.threads, gpu_.warp_size));
  auto wave_us = [&](int64_t concurrent) {
    double busy = concurrent * block_us / latency_hiding(double(concurrent * warps_per_block));
    return std::max(busy, latency_floor_us) + kWaveFixedUs;
  };
  int64_t full_waves = t.blocks_on_busiest_sm / t.resident_blocks_per_sm;
  int64_t tail = t.blocks_on_busiest_sm % t.resident_blocks_per_sm;
  t.compute_us = full_waves * wave_us(t.resident_blocks_per_sm) + (tail ? wave_us(tail) : 0);

  // Memory: operands and output cross DRAM once; tiles cross L2 once per block (an implicit
  // GEMM's gathered A tile too: overlapping taps are L2 hits, not DRAM traffic). Every batch
  // element of a batch_matmul has its own B; a dense layer's batch is 1.
  int eb = element_bytes(dtype);
  double mn = double(shape.batch) * shape.M * shape.N;
  double a_elements = double(shape.batch) * shape.M * shape.K;
  if (auto conv = conv_geometry(input, shape))
    a_elements = double(conv->n) * conv->h * conv->w * conv->c;
  double dram_bytes = (a_elements + double(shape.batch) * shape.N * shape.K) * eb + mn * eb;
  double l2_bytes = double(tiles) * (plan.tile_m + plan.tile_n) * double(k_tiles * bk) * eb;
  double partials = plan.split_k > 1 ? mn * plan.split_k * 4 : 0;               // fp32 partial sums
  if (plan.split_k > 1 && plan.reduce_entry.empty()) l2_bytes += 2 * partials;  // atomics in L2
  if (plan.split_k > 1 && !plan.reduce_entry.empty()) dram_bytes += partials;
  double dram_bytes_per_us = gpu_.mem_bandwidth_gbs * 1e3 * kDramEfficiency;
  double l2_bytes_per_us = gpu_.mem_bandwidth_gbs * 1e3 * kL2BandwidthFactor;
  t.memory_us = std::max(dram_bytes / dram_bytes_per_us, l2_bytes / l2_bytes_per_us);

  t.launch_us = options_.launch_overhead_us;
  if (plan.split_k > 1 && !plan.reduce_entry.empty())
    t.reduce_us = (partials + mn * eb) / dram_bytes_per_us +
                  options_.launch_overhead_us * kReduceLaunchFraction;
  t.latency_us = t.launch_us + std::max(t.compute_us, t.memory_us) + t.reduce_us;
  return t;
}

double SimulatedDevice::noise_factor(const MeasureInput& input, const GemmShape& shape) const {
  if (options_.noise_sigma == 0) return 1.0;
  std::string identity =
      fmt::format("{}|{}|{},{},{},{}", input.mk.key(), input.op ? input.op->name : "", shape.batch,
                  shape.M, shape.N, shape.K);
  uint64_t seed_state = options_.seed;
  uint64_t state = fnv1a(identity) ^ splitmix64(seed_state);
  // Box-Muller from two uniforms in (0, 1].
  double u1 = (double(splitmix64(state) >> 11) + 1) * 0x1.0p-53;
  double u2 = double(splitmix64(state) >> 11) * 0x1.0p-53;
  double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  return std::exp(options_.noise_sigma * z);
}

std::vector<MeasureResult> SimulatedDevice::measure(const std::vector<MeasureInput>& inputs) {
  const auto delay = std::chrono::duration<double>(options_.delay_seconds);
  if (options_.fail_after_calls >= 0 && calls_ >= options_.fail_after_calls) {
    // Dies mid-job, as a real device would: after part of the work, before any result.
    std::this_thread::sleep_for(delay * double(inputs.size()) / 2);
    throw EnvironmentError(
        fmt::format("simulated GPU {}: the measurement worker died and cannot be restarted (a test "
                    "double told to fail after {} jobs)",
                    options_.ordinal, options_.fail_after_calls));
  }
  ++calls_;
  std::vector<MeasureResult> results;
  results.reserve(inputs.size());
  for (const auto& input : inputs) {
    auto start = std::chrono::steady_clock::now();
    if (options_.delay_seconds > 0) std::this_thread::sleep_for(delay);
    MeasureResult result;
    result.latency_us.assign(input.instances.size(), std::numeric_limits<double>::quiet_NaN());
    if (!input.compiled.ok) {
      result.status = MeasureStatus::kCompileError;
      std::string log = input.compiled.log;
      size_t begin = log.find_first_not_of(" \t\r\n");
      result.error = begin == std::string::npos ? "the compiler gave no reason"
                                                : log.substr(begin, log.find('\n', begin) - begin);
    } else {
      for (size_t i = 0; i < input.instances.size(); ++i) {
        SimulatedTiming t = model(input, input.instances[i].gemm);
        if (t.status != MeasureStatus::kOk) {
          result.status = t.status;
          result.error = t.error;
          std::fill(result.latency_us.begin(), result.latency_us.end(),
                    std::numeric_limits<double>::quiet_NaN());
          break;
        }
        result.latency_us[i] = t.latency_us * noise_factor(input, input.instances[i].gemm);
      }
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace dietcode
